#!/bin/bash
# cligym verifier: runs under the static busybox shipped in the task's tests/
exec "${TEST_DIR:-/tests}"/@BUSYBOX@ sh "${TEST_DIR:-/tests}"/@VERIFIER@ tb "${TEST_DIR:-/tests}" @LOGS@
