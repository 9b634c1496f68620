#!/usr/bin/env bash
# pki.sh: a throw-away PKI for poolwatch demos and tests, made with the openssl CLI.
#
#   deploy/pki.sh DIR [--collector-name NAME] [--agent NAME ...] [--cli NAME] [--days N]
#                     [--revoke BASE ...]
#
# Creates in DIR (EC P-256 keys, SHA-256 signatures, keys mode 0600):
#   ca.pem ca.key                 the CA (CN "poolwatch throw-away CA <random>")
#   collector.pem collector.key   server certificate, SANs DNS:localhost, IP:127.0.0.1,
#                                 DNS:<collector name> (default: this machine's host name)
#   agent-NAME.pem agent-NAME.key one client certificate per --agent, CN and SAN DNS = NAME,
#                                 OU "poolwatch-agent" (the role the collector requires)
#   cli.pem cli.key               client certificate for the CLI, CN and SAN DNS = --cli NAME
#                                 (default poolwatch-cli), OU "poolwatch-cli": no agent
#   crl.pem                       the CA's revocation list (valid --days), for crl_file
# --revoke BASE (agent-NAME, cli, collector) revokes DIR/BASE.pem, renames it and its key to
# BASE.revoked-SERIAL.pem/.key and writes crl.pem again; revocations run before certificates
# are made, so `--revoke agent-a1 --agent a1` replaces a1's certificate. The CA's records are
# ca.db and ca.crlnumber (openssl ca).
# Idempotent: existing files are kept (and checked against ca.pem); only missing ones are made,
# and an agent certificate without the agent role (made before it existed) is made again.
# For negative tests (another CA), run it again into another DIR: each run into an empty DIR
# makes an unrelated CA with the same file names.
# Prints one line per file: "created FILE" or "kept FILE". Exits non-zero on any error.
set -euo pipefail

usage() {
  sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

die() { echo "pki.sh: $*" >&2; exit 1; }

[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; -*) die "first argument must be the output directory" ;; esac
DIR=$1; shift
COLLECTOR_NAME=$(hostname -f 2>/dev/null || hostname 2>/dev/null || echo poolwatch-collector)
COLLECTOR_NAME_GIVEN=0
CLI_NAME=poolwatch-cli
DAYS=825
AGENTS=()
REVOKE=()
while [ $# -gt 0 ]; do
  case "$1" in
    --collector-name) [ $# -ge 2 ] || usage; COLLECTOR_NAME=$2; COLLECTOR_NAME_GIVEN=1; shift 2 ;;
    --agent) [ $# -ge 2 ] || usage; AGENTS+=("$2"); shift 2 ;;
    --cli) [ $# -ge 2 ] || usage; CLI_NAME=$2; shift 2 ;;
    --days) [ $# -ge 2 ] || usage; DAYS=$2; shift 2 ;;
    --revoke) [ $# -ge 2 ] || usage; REVOKE+=("$2"); shift 2 ;;
    -h|--help) usage ;;
    *) die "unknown argument '$1'" ;;
  esac
done

# Names go into -subj and extension files: allow host-name characters only.
check_name() {
  [[ "$1" =~ ^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$ ]] ||
    die "'$1' is not a valid host name (letters, digits, '.', '-')"
}
if [ "$COLLECTOR_NAME_GIVEN" = 0 ] && ! [[ "$COLLECTOR_NAME" =~ ^[A-Za-z0-9.-]+$ ]]; then
  COLLECTOR_NAME=poolwatch-collector # an odd local host name is not worth failing for
fi
check_name "$COLLECTOR_NAME"
check_name "$CLI_NAME"
for a in ${AGENTS[@]+"${AGENTS[@]}"}; do check_name "$a"; done
for b in ${REVOKE[@]+"${REVOKE[@]}"}; do
  [[ "$b" =~ ^(collector|cli|agent-[A-Za-z0-9.-]+)$ ]] || die "--revoke: '$b' is not collector, cli or agent-NAME"
done
[[ "$DAYS" =~ ^[0-9]+$ ]] && [ "$DAYS" -gt 0 ] || die "--days must be a positive integer"
command -v openssl >/dev/null || die "the openssl command is required (apt-get install openssl)"

mkdir -p "$DIR"
umask 077
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

newkey() {
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>"$TMP/err" ||
    { cat "$TMP/err" >&2; die "cannot create key $1"; }
}

serial() { echo "0x$(openssl rand -hex 16)"; }

# --- CA --------------------------------------------------------------------------------------
if [ -f "$DIR/ca.pem" ] && [ -f "$DIR/ca.key" ]; then
  echo "kept $DIR/ca.pem"
elif [ -f "$DIR/ca.pem" ] || [ -f "$DIR/ca.key" ]; then
  die "$DIR has only one of ca.pem and ca.key: remove it or restore the other"
else
  for f in "$DIR"/collector.pem "$DIR"/cli.pem "$DIR"/agent-*.pem; do
    [ -e "$f" ] && die "$f exists but the CA does not: remove the old certificates first"
  done
  newkey "$TMP/ca.key"
  openssl req -new -x509 -key "$TMP/ca.key" -sha256 -days "$DAYS" -set_serial "$(serial)" \
    -subj "/CN=poolwatch throw-away CA $(openssl rand -hex 4)" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -addext "subjectKeyIdentifier=hash" \
    -out "$TMP/ca.pem" 2>"$TMP/err" || { cat "$TMP/err" >&2; die "cannot create the CA"; }
  mv "$TMP/ca.key" "$DIR/ca.key"
  chmod 644 "$TMP/ca.pem"
  mv "$TMP/ca.pem" "$DIR/ca.pem"
  echo "created $DIR/ca.pem (and ca.key)"
fi

# --- revocation (openssl ca keeps the list in ca.db) -------------------------------------------
cat >"$TMP/ca.cnf" <<EOF
[ ca ]
default_ca = pw
[ pw ]
database = $DIR/ca.db
crlnumber = $DIR/ca.crlnumber
certificate = $DIR/ca.pem
private_key = $DIR/ca.key
default_md = sha256
default_crl_days = $DAYS
unique_subject = no
EOF
[ -f "$DIR/ca.db" ] || : >"$DIR/ca.db"
[ -f "$DIR/ca.crlnumber" ] || echo 01 >"$DIR/ca.crlnumber"
for b in ${REVOKE[@]+"${REVOKE[@]}"}; do
  pem="$DIR/$b.pem"
  [ -f "$pem" ] || die "--revoke $b: $pem does not exist"
  ser=$(openssl x509 -in "$pem" -noout -serial | sed 's/^serial=//')
  openssl ca -batch -config "$TMP/ca.cnf" -revoke "$pem" -crl_reason superseded 2>"$TMP/err" ||
    { cat "$TMP/err" >&2; die "cannot revoke $pem"; }
  mv "$pem" "$DIR/$b.revoked-$ser.pem"
  [ -f "$DIR/$b.key" ] && mv "$DIR/$b.key" "$DIR/$b.revoked-$ser.key"
  echo "revoked $pem (serial $ser; now $DIR/$b.revoked-$ser.pem)"
done
if [ ${#REVOKE[@]} -gt 0 ] || [ ! -f "$DIR/crl.pem" ]; then
  openssl ca -batch -config "$TMP/ca.cnf" -gencrl -out "$TMP/crl.pem" 2>"$TMP/err" ||
    { cat "$TMP/err" >&2; die "cannot write the CRL"; }
  chmod 644 "$TMP/crl.pem"
  mv "$TMP/crl.pem" "$DIR/crl.pem"
  echo "created $DIR/crl.pem"
else
  echo "kept $DIR/crl.pem"
fi

# leaf BASENAME CN SERVER|CLIENT SAN [OU]
leaf() {
  local base=$1 cn=$2 kind=$3 san=$4 ou=${5:-} eku subj
  local pem="$DIR/$base.pem" key="$DIR/$base.key"
  if [ -f "$pem" ] && [ -f "$key" ] && [ -n "$ou" ] &&
    ! openssl x509 -in "$pem" -noout -subject -nameopt multiline 2>/dev/null |
      grep -q "organizationalUnitName *= $ou\$"; then
    echo "pki.sh: $pem has no OU '$ou' (made by an older pki.sh): making it again" >&2
    rm -f "$pem" "$key"
  fi
  if [ -f "$pem" ] && [ -f "$key" ]; then
    openssl verify -CAfile "$DIR/ca.pem" "$pem" >/dev/null 2>&1 ||
      die "$pem was not issued by $DIR/ca.pem: remove it to make a new one"
    echo "kept $pem"
    return
  fi
  [ "$kind" = SERVER ] && eku=serverAuth || eku=clientAuth
  newkey "$TMP/$base.key"
  subj="/CN=$cn"
  [ -n "$ou" ] && subj="/OU=$ou/CN=$cn"
  openssl req -new -key "$TMP/$base.key" -subj "$subj" -out "$TMP/$base.csr" 2>"$TMP/err" ||
    { cat "$TMP/err" >&2; die "cannot create the request for $pem"; }
  cat >"$TMP/$base.ext" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=$eku
subjectAltName=$san
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
EOF
  openssl x509 -req -in "$TMP/$base.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" \
    -set_serial "$(serial)" -days "$DAYS" -sha256 -extfile "$TMP/$base.ext" \
    -out "$TMP/$base.pem" 2>"$TMP/err" || { cat "$TMP/err" >&2; die "cannot sign $pem"; }
  mv "$TMP/$base.key" "$key"
  chmod 644 "$TMP/$base.pem"
  mv "$TMP/$base.pem" "$pem"
  echo "created $pem (CN=$cn, $san)"
}

leaf collector "$COLLECTOR_NAME" SERVER "DNS:localhost,IP:127.0.0.1,DNS:$COLLECTOR_NAME"
if [ "$COLLECTOR_NAME_GIVEN" = 1 ] && ! openssl x509 -in "$DIR/collector.pem" -noout -checkhost "$COLLECTOR_NAME" 2>/dev/null |
  grep -q "does match"; then
  echo "pki.sh: warning: kept $DIR/collector.pem does not name '$COLLECTOR_NAME'" >&2
fi
for a in ${AGENTS[@]+"${AGENTS[@]}"}; do
  leaf "agent-$a" "$a" CLIENT "DNS:$a" poolwatch-agent
done
leaf cli "$CLI_NAME" CLIENT "DNS:$CLI_NAME" poolwatch-cli
