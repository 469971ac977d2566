#!/usr/bin/env bash
# The Debian package: `make deb` builds it, lintian finds no errors, `dpkg -i` installs it (the
# wattage user, the state directory, the unit, the conffile), `wattage version` runs, a changed
# conffile survives reinstalling, `dpkg -r` removes the binary and keeps the conffile, and
# `dpkg -P` purges the configuration, the state and the user. Installing needs root: as another
# user this fails (it is never skipped). It refuses to touch a wattage package already installed.
# test: exclusive (it installs the package on the machine and runs make)
source "$(dirname "$0")/lib.sh"
if [[ $(id -u) != 0 ]]; then
    not_ok "the package test runs as root (dpkg -i)" "uid $(id -u): run the suite as root"
    finish
fi
if dpkg-query -W -f='${Status}' wattage 2>/dev/null | grep -q installed; then
    not_ok "no wattage package installed before the test" "remove it first; this test will not replace it"
    finish
fi
installed=""
purge() { [[ -n $installed ]] && dpkg -P wattage >/dev/null 2>&1; cleanup; }
trap purge EXIT

deb=$(make -s --no-print-directory deb 2>"$TMP/deb.err" | tail -n1)
check "make deb builds a .deb" test -f "$deb"
lint=$(lintian "$deb" 2>&1)
check "lintian finds no errors" bash -c '! grep -q "^E: " <<<"$1"' _ "$lint"
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/wattage ./lib/systemd/system/wattage.service ./usr/lib/sysusers.d/wattage.conf \
    ./usr/lib/tmpfiles.d/wattage.conf ./lib/udev/rules.d/60-wattage-rapl.rules \
    ./etc/wattage/wattage.yaml ./var/lib/wattage/; do
    check "the package holds $f" grep -q " $f\$" <<<"$contents"
done
for f in eu-eed-2024-1364.v1.schema.json enefg.v1.json; do # `wattage report --standard`
    check "the package holds $f" grep -q " ./usr/share/wattage/standards/$f\$" <<<"$contents"
done

installed=1
check "dpkg -i installs it" bash -c "dpkg -i '$deb' >'$TMP/dpkg.log' 2>&1"
check "wattage version runs from /usr/bin" bash -c '[[ $(/usr/bin/wattage version) == *0.1.0* ]]'
check "postinst created the wattage system user" bash -c 'getent passwd wattage | grep -q ":/var/lib/wattage:"'
check "/var/lib/wattage belongs to wattage, mode 0750" bash -c '[[ $(stat -c "%U %a" /var/lib/wattage) == "wattage 750" ]]'
check "/etc/wattage/wattage.yaml is a conffile" \
    bash -c 'dpkg-query -W -f="\${Conffiles}" wattage | grep -q /etc/wattage/wattage.yaml'
echo "# changed by the operator" >>/etc/wattage/wattage.yaml
check "reinstalling keeps the changed conffile" \
    bash -c "dpkg -i '$deb' >/dev/null && grep -q 'changed by the operator' /etc/wattage/wattage.yaml"
check "dpkg -r removes the binary and keeps the configuration" \
    bash -c 'dpkg -r wattage >/dev/null && ! test -e /usr/bin/wattage && test -f /etc/wattage/wattage.yaml'
check "dpkg -P purges the configuration, the state and the user" \
    bash -c 'dpkg -P wattage >/dev/null && ! test -e /etc/wattage && ! test -e /var/lib/wattage && ! getent passwd wattage'
installed=""
finish
