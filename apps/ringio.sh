#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# ringio COMMAND [ARGS...]: runs ringio-COMMAND (installed beside this script), so that
# `ringio top 9100` is `ringio-top 9100` and `ringio doctor` is `ringio-doctor`.
here=$(dirname "$0")
case "$1" in
  top | doctor)
    command=$1
    shift
    exec "$here/ringio-$command" "$@"
    ;;
  *)
    echo "usage: ringio top|doctor [ARGS...]   (ringio-top --help, ringio-doctor --help)" >&2
    exit 2
    ;;
esac
