# SPDX-License-Identifier: MIT
# dist area: what a distribution needs of the tree.  The licence (MIT,
# LICENSE) and the check that every source file says so
# (tools/spdx-add, run by tests/scripts/licence.sh); one form of man-page footer
# (tests/scripts/man-footers.sh, against configure's version).  debian/ is not in
# the release tarball, as usual upstream: a Debian source package is that
# tarball as its .orig.tar.gz plus debian/ from the repository
# (tests/install/debian.sh builds it that way).
EXTRA_DIST += LICENSE
dist_noinst_SCRIPTS += tools/spdx-add tests/scripts/licence.sh tests/scripts/man-footers.sh
AM_TESTS_ENVIRONMENT += DEVQ_VERSION='$(PACKAGE_VERSION)'; export DEVQ_VERSION;
EXTRA_DIST += mk/dist.mk
