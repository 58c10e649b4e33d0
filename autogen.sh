#!/bin/sh
# SPDX-License-Identifier: MIT
# Regenerate configure and Makefile.in from configure.ac and Makefile.am.
set -e
cd "$(dirname "$0")"
mkdir -p m4     # libtoolize fills it; aclocal looks there first
autoreconf --install --force --warnings=all
