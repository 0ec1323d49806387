# shellcheck shell=sh disable=SC2086,SC3045
# Sourced (by verifier.sh, by the guard's phase.sh, and by cligym's own runner before it
# uploads a task's tests): defines sweep, which leaves alive only PID 1, the container's
# keep-alive (the first child of PID 1, started with it, as in Harbor's `sh -c "sleep
# infinity"`: stopped, not killed, so the container does not end), the caller's ancestors
# (the harness's exec chain) and the caller. Only shell builtins run inside a round, so it
# forks nothing there.

# fields PID: the fields of /proc/PID/stat after the process's name, in $stat ("" when it
# is gone). The whole file is read: a name may hold a newline or ") Z ", and the fields
# start after the last ") ".
fields() {
  stat=""
  read -r -d '' stat < "/proc/$1/stat" 2>/dev/null
  stat=${stat##*) }
}

KEEP=" 1 $$ "
ANCESTORS=""
pid=$$
while [ "$pid" -gt 1 ]; do
  fields "$pid"
  [ -n "$stat" ] || break
  set -- $stat
  pid=$2
  KEEP="$KEEP$pid "
  [ "$pid" -gt 1 ] && ANCESTORS="$ANCESTORS $pid"
done
fields 1
set -- $stat
BORN=$((${20} + 200))  # clock ticks: a child of PID 1 this young may be the container's keep-alive
KEEPALIVE_PID=""  # the first-born such child: one process, which nothing started later can be
first=$BORN
for dir in /proc/[0-9]*; do
  fields "${dir#/proc/}"
  [ -n "$stat" ] || continue
  set -- $stat
  if [ "$2" = 1 ] && [ "${20}" -le "$first" ]; then
    if [ -z "$KEEPALIVE_PID" ] || [ "${20}" -lt "$first" ] \
      || { [ "${20}" = "$first" ] && [ "${dir#/proc/}" -lt "$KEEPALIVE_PID" ]; }; then
      KEEPALIVE_PID=${dir#/proc/}
      first=${20}
    fi
  fi
done

# alive DIR: a process (/proc/PID) one of whose threads is not a zombie: a main thread that
# called pthread_exit is one, and its process runs on in its other threads.
alive() {
  for thread in "$1"/task/[0-9]*; do
    tstat=""
    read -r -d '' tstat 2>/dev/null < "$thread/stat"
    [ -n "$tstat" ] || continue
    tstat=${tstat##*) }
    case "$tstat" in Z*|X*) ;; *) return 0 ;; esac
  done
  return 1
}

# sweep: SIGSTOP to every process at once (the kernel's kill(-1): no fork escapes it), then
# SIGKILL to each but PID 1, its keep-alive (left stopped), our ancestors and us (a zombie
# only when none of its threads lives on), then
# SIGCONT to our ancestors. Rounds repeat until one finds nobody; 0 after 40 rounds.
sweep() {
  round=0
  while :; do
    round=$((round + 1))
    kill -STOP -1 2>/dev/null
    left=""
    for dir in /proc/[0-9]*; do
      pid=${dir#/proc/}
      case "$KEEP" in *" $pid "*) continue ;; esac
      [ "$pid" = "$KEEPALIVE_PID" ] && continue
      fields "$pid"
      [ -n "$stat" ] || continue
      set -- $stat
      case "$1" in Z|X) alive "$dir" || continue ;; esac
      kill -9 "$pid" 2>/dev/null
      left="$left $pid"
    done
    for pid in $ANCESTORS; do kill -CONT "$pid" 2>/dev/null; done
    [ -z "$left" ] && return 0
    [ "$round" -ge 40 ] && return 1
    [ "$round" -ge 3 ] && sleep 0.05
  done
}


# pid1_ok FILE: PID 1 still runs a keep-alive program: its executable's bytes are one of
# the hashes in FILE (gold's shells, sleep and inits, and the task's own busybox). No signal
# from inside the container reaches PID 1, so a PID 1 made to run something else (a
# debugger can make it exec anything) would outlive every sweep.
pid1_ok() {
  sum=$(sha256sum /proc/1/exe 2>/dev/null | cut -c1-64)
  [ -n "$sum" ] || return 0  # not ours to read: nothing to say
  grep -qxF "$sum" "$1"
}
