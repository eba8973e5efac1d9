# shellcheck shell=bash
# Sourced by scripts/redis-suite.sh and scripts/redis-harness.sh: the work directory both copy
# Redis's test suite into, checked so that neither ever writes into the source tree or into a
# directory it did not make.
#
# prepare_workdir NAME SRC DIR HINT: makes DIR (absolute), refuses it if it is SRC or a non-empty
# directory without NAME's mark, marks it; sets SRC and DIR to their absolute paths.
prepare_workdir() {
  local name=$1 hint=$4
  SRC=$(cd "$2" && pwd) || exit 2
  mkdir -p "$3" || exit 2
  DIR=$(cd "$3" && pwd) || exit 2
  [ "$DIR" != "$SRC" ] || { echo "$name: the work directory must not be the source tree" >&2; exit 2; }
  local mark="$DIR/.latch-$name"
  if [ ! -e "$mark" ] && [ -n "$(ls -A "$DIR")" ]; then
    echo "$name: $DIR is not empty and was not made by this script; set $hint" >&2; exit 2
  fi
  touch "$mark"
}
