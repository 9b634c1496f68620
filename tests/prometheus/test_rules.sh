#!/bin/sh
# test_rules.sh SOURCE_DIR: deploy/prometheus/poolwatch.rules.yml is valid (promtool check
# rules) and its unit tests pass (promtool test rules tests/prometheus/poolwatch.rules.test.yml:
# hand-made series, exact alerts and annotations). promtool is Debian's prometheus package
# (deploy/install-deps.sh --prometheus).
SRC=$1
. "$SRC/tests/check.sh"
if ! command -v promtool >/dev/null; then
    skip_part "promtool is missing (deploy/install-deps.sh --prometheus)"
    finish
fi
promtool check rules "$SRC/deploy/prometheus/poolwatch.rules.yml"
check "promtool check rules" 0 $?
cd "$SRC/tests/prometheus" || exit 1
promtool test rules poolwatch.rules.test.yml
check "promtool test rules" 0 $?
finish
