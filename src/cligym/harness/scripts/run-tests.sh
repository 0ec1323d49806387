#!/bin/bash
# cligym verifier: runs under the static busybox shipped in the task's tests/
exec "${TEST_DIR:-/tests}"/bin/busybox sh "${TEST_DIR:-/tests}"/reference/verifier.sh tb "${TEST_DIR:-/tests}" @LOGS@
