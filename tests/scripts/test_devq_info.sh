#!/bin/sh
# SPDX-License-Identifier: MIT
# devq-info against a folder of purpose-built broken plugins: it must exit
# 0, name every file with the reason it was skipped, list the good
# backend's devices, print valid JSON, and say in one line when there is
# no accelerator.  Run by 'make check' (top_builddir comes from
# AM_TESTS_ENVIRONMENT).
set -u
top_builddir=${top_builddir:-.}
info="$top_builddir/tools/devq-info"
plugins=$(cd "$top_builddir/tests/plugins/.libs" 2>/dev/null && pwd) || {
    echo "test plugins not built (run 'make check')"; exit 99; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/devq-info-XXXXXX") || exit 99
trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

mkdir "$dir/all" "$dir/broken"
for k in fake noentry initfail nulltable future small nullop badname halfkernel old; do
    ln -s "$plugins/devq-$k.so" "$dir/all/devq-$k.so" || exit 99
    [ "$k" = fake ] || ln -s "$plugins/devq-$k.so" "$dir/broken/devq-$k.so" || exit 99
done
echo "this is not an ELF file" > "$dir/all/devq-notelf.so"

unset DEVQ_BACKEND DEVQ_LOG DEVQ_LOG_FILE
out=$(DEVQ_PLUGIN_PATH="$dir/all" "$info") || fail "devq-info exited $?"
printf '%s\n' "$out"

# The line after a plugin's path says what became of it.
verdict() {
    printf '%s\n' "$out" | awk -v f="/$1" 'found { print; exit }
        { n = length($0); m = length(f); if (n >= m && substr($0, n - m + 1) == f) found = 1 }'
}
expect() {
    v=$(verdict "$1")
    case "$v" in
        *"$2"*) ;;
        *) fail "$1: expected '$2', got '$v'" ;;
    esac
}
expect devq-notelf.so "skipped (ENOEXEC): cannot load"
expect devq-noentry.so "no 'devq_plugin_init' symbol"
expect devq-initfail.so "initfail: refusing to start on purpose"
expect devq-nulltable.so "returned no ops table"
expect devq-future.so "skipped (ENOTSUP, ABI 99): plugin ABI version 99 is newer than this libdevq's 1"
expect devq-small.so "ops table size"
expect devq-nullop.so "required op 'event_wait' is NULL"
expect devq-badname.so "invalid backend name 'Bad-Name'"
expect devq-halfkernel.so "kernel ops incomplete"
expect devq-old.so "backend old, ABI 1, 1 device"
expect devq-fake.so "backend fake, ABI 1, 2 devices"

has() { printf '%s\n' "$out" | grep -F -q -- "$1" || fail "output lacks '$1'"; }
has "(built in)"
has "fake:0   fake device zero"
has "fake:1   fake device one"
has "memory 1.0 GiB, 1 compute unit"
has "caps: host_visible"
has "old:0    cannot open (ENOTSUP): "
# Plugins installed in $(libdir)/devq on this machine would add devices.
installed=$(printf '%s\n' "$out" | sed -n 's/^plugin folders: .*://p; s/^plugin folders: \([^:]*\)$/\1/p' | head -n1)
if ls "$installed"/devq-*.so > /dev/null 2>&1; then
    echo "note: plugins installed in $installed: accelerator counts not checked"
    own_only=false
else
    own_only=true
fi
$own_only && has "2 accelerators found"

# Without an accelerator: exit 0 and one line saying so.
out=$(DEVQ_PLUGIN_PATH="$dir/broken" "$info") || fail "devq-info (no accelerator) exited $?"
if $own_only; then
    n=$(printf '%s\n' "$out" | grep -c -x "no accelerator found; the cpu backend is available")
    [ "$n" = 1 ] || fail "no-accelerator line printed $n times"
fi
has "cpu:0 "

# Every cap bit has a name, an unknown one shows as bitN; a software
# device (lavapipe's kind) is no accelerator: devq_device_open(NULL) takes
# the cpu before it, and devq-info says both (devq-info(1)).
out=$(DEVQ_FAKE_CAPS=0x10000000a00 DEVQ_PLUGIN_PATH="$dir/all" "$info") ||
    fail "devq-info (software fake) exited $?"
has "caps: host_visible software kernel_check bit40"
if $own_only; then
    has "no accelerator found; the cpu backend is available"
    has "2 software devices (fake:0, fake:1), tried after cpu"
    printf '%s\n' "$out" | grep -q "^devq_device_open(NULL) opens cpu:0$" ||
        fail "software devices: devq_device_open(NULL) should open cpu:0"
fi
json=$(DEVQ_FAKE_CAPS=0x10000000a00 DEVQ_PLUGIN_PATH="$dir/all" "$info" --json) ||
    fail "devq-info --json (software fake) exited $?"
case "$json" in
    *'"caps": ["host_visible", "software", "kernel_check", "bit40"]'*) ;;
    *) fail "JSON caps lack the software/kernel_check/bit40 names" ;;
esac
if $own_only; then
    case "$json" in
        *'"accelerators": 0,'*'"software_devices": 2'*) ;;
        *) fail "JSON: software devices counted as accelerators" ;;
    esac
fi

# A plugin named by a manifest (devq-plugin(7)), outside every plugin
# folder: listed with the manifest it came from; a bad manifest is listed
# with its line and column; the manifest folders are shown.
mkdir "$dir/manifests" "$dir/elsewhere"
ln -s "$plugins/devq-fake.so" "$dir/elsewhere/devq-fake.so" || exit 99
printf '{"file_format_version": 1,\n "plugin": {"library_path": "../elsewhere/devq-fake.so", "abi_version": 1}}\n' \
    > "$dir/manifests/acme.json"
printf '{"file_format_version": 1,\n "plugin": {"library_path": 1}}\n' > "$dir/manifests/bad.json"
out=$(DEVQ_PLUGIN_MANIFEST_PATH="$dir/manifests" DEVQ_PLUGIN_PATH="$dir/broken" "$info") ||
    fail "devq-info (manifests) exited $?"
has "manifest folders: $dir/manifests"
expect bad.json "skipped (EINVAL): bad manifest: line 2, column 29: \"library_path\" must be a string"
expect devq-fake.so "backend fake, ABI 1, 2 devices"
printf '%s\n' "$out" | grep -A2 -F -- "$dir/manifests/../elsewhere/devq-fake.so" |
    grep -q -F -- "      from: manifest $dir/manifests/acme.json" || fail "fake's manifest not named"
printf '%s\n' "$out" | grep -A2 -F -- "$dir/broken/devq-old.so" |
    grep -q -F -- "      from: folder $dir/broken (DEVQ_PLUGIN_PATH)" || fail "old's folder not named"
json=$(DEVQ_PLUGIN_MANIFEST_PATH="$dir/manifests" DEVQ_PLUGIN_PATH="$dir/broken" "$info" --json) ||
    fail "devq-info --json (manifests) exited $?"
case "$json" in
    *'"from": "manifest '"$dir"'/manifests/acme.json"'*) ;;
    *) fail "JSON lacks the manifest a plugin came from" ;;
esac

# JSON for scripts.
py=${PYTHON3:-python3}
if command -v "$py" >/dev/null 2>&1; then
    DEVQ_PLUGIN_PATH="$dir/all" "$info" --json -e > "$dir/out.json" || fail "devq-info --json exited $?"
    "$py" -m json.tool "$dir/out.json" > /dev/null || fail "--json output is not valid JSON"
    "$py" - "$dir/out.json" <<'PY' || fail "JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
by_file = {p["path"].rsplit("/", 1)[-1]: p for p in d["plugins"]}
assert d["plugins"][0]["path"] == "(built in)" and d["plugins"][0]["name"] == "cpu"
assert by_file["devq-notelf.so"]["loaded"] is False
assert by_file["devq-future.so"]["abi_version"] == 99
assert "newer" in by_file["devq-future.so"]["reason"]
assert by_file["devq-fake.so"]["devices"] == 2
fake0 = [x for x in d["devices"] if x["spec"] == "fake:0"][0]
assert fake0["caps"] == ["host_visible"] and fake0["total_memory"] == 1 << 30
assert d["environment"]["DEVQ_BACKEND"] is None
assert d["accelerators"] >= 2
PY
else
    echo "SKIP JSON checks: no python3"
fi

# -e lists every variable devq reads, with its value.
out=$(DEVQ_MEM_BUDGET=64M DEVQ_PLUGIN_PATH="$dir/broken" "$info" -e) || fail "devq-info -e exited $?"
for v in DEVQ_BACKEND DEVQ_PLUGIN_PATH DEVQ_LOG DEVQ_LOG_FILE DEVQ_TRACE DEVQ_TRACE_MAX \
         DEVQ_MEM_POOL DEVQ_MEM_BUDGET DEVQ_MEM_LOG DEVQ_MEM_GUARD DEVQ_CPU_DEVICES DEVQ_CPU_THREADS \
         DEVQ_CUDA_LIBRARY DEVQ_HIP_LIBRARY DEVQ_NCCL_LIBRARY DEVQ_RCCL_LIBRARY; do
    printf '%s\n' "$out" | grep -q "^  $v " || fail "-e lacks $v"
done
printf '%s\n' "$out" | grep -q "^  DEVQ_MEM_BUDGET *64M$" || fail "-e does not show DEVQ_MEM_BUDGET=64M"
printf '%s\n' "$out" | grep -q "^  DEVQ_BACKEND *(unset)$" || fail "-e does not show unset DEVQ_BACKEND"

printf '%s\n' "$out" | grep -q "^devq_device_open(NULL) opens cpu:0$" || fail "no default-device line"

# Exit statuses (devq-info(1)): 3 for an invalid environment, with the
# reason on stderr; 1 when devq_device_open(NULL) finds no device.
status_of() {   # expected-status stderr-text env...
    want=$1 text=$2
    shift 2
    err=$(env "$@" DEVQ_PLUGIN_PATH="$dir/broken" "$info" 2>&1 >/dev/null)
    got=$?
    [ "$got" = "$want" ] || fail "$*: exit $got, expected $want"
    case "$err" in
        *"$text"*) ;;
        *) fail "$*: stderr '$err' lacks '$text'" ;;
    esac
}
status_of 3 "DEVQ_BACKEND='cdua': unknown backend 'cdua'; did you mean 'cuda'?" DEVQ_BACKEND=cdua
status_of 3 "DEVQ_MEM_BUDGET='12Q'" DEVQ_MEM_BUDGET=12Q
status_of 3 "DEVQ_MEM_GUARD='maybe'" DEVQ_MEM_GUARD=maybe
status_of 3 "DEVQ_TRACE='/no/such/dir/t.json'" DEVQ_TRACE=/no/such/dir/t.json
status_of 3 "DEVQ_CPU_THREADS='0'" DEVQ_CPU_THREADS=0
status_of 1 "no device" DEVQ_CPU_DEVICES=0 DEVQ_BACKEND=cpu
out=$(DEVQ_MEM_POOL=cuda DEVQ_PLUGIN_PATH="$dir/broken" "$info" -e 2>/dev/null)
printf '%s\n' "$out" | grep -q "^      INVALID: DEVQ_MEM_POOL='cuda': unknown pool" ||
    fail "-e does not mark DEVQ_MEM_POOL=cuda invalid"

"$info" -h | grep -q "^Usage: devq-info" || fail "-h"
"$info" --bogus > /dev/null 2>&1
[ $? = 2 ] || fail "a bad option should exit 2"

[ "$failures" = 0 ] && echo "PASS: devq-info" && exit 0
exit 1
