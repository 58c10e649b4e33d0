# SPDX-License-Identifier: MIT
# dist area: what a distribution needs of the tree.  One form of man-page
# footer (tests/man-footers.sh, against configure's version).
dist_noinst_SCRIPTS += tests/man-footers.sh
TESTS += tests/man-footers.sh
AM_TESTS_ENVIRONMENT += DEVQ_VERSION='$(PACKAGE_VERSION)'; export DEVQ_VERSION;
EXTRA_DIST += mk/dist.mk
