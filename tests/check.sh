# check.sh: sourced by the shell tests. check NAME EXPECTED ACTUAL prints ok/FAIL and sets
# fail=1 on a mismatch; the test exits with $fail.
fail=0
check() {
    if [ "$2" != "$3" ]; then
        echo "FAIL $1: expected [$2] got [$3]"
        fail=1
    else
        echo "ok   $1"
    fi
}
