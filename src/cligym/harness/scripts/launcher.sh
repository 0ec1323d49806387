#!/tests/bin/busybox sh
# Harbor starts the verifier with `bash -c`: this runs it under the task's own busybox
exec /tests/bin/busybox sh "$@"
