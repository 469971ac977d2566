#!/bin/sh
# Builds build/wattage_VERSION_ARCH.deb with dpkg-deb: the binary, its manual pages (make's
# build/man/) and bash completion, the systemd unit, sysusers,
# tmpfiles and udev files, the default configuration as a conffile, the state directory and the
# maintainer scripts of deploy/debian/. Usage: scripts/deb.sh BUILD_DIR VERSION
set -eu
build=$1 version=$2
arch=$(dpkg --print-architecture)
# The maintainer: DEB_MAINTAINER, else the author of the commit built.
maint=${DEB_MAINTAINER:-$(git log -1 --format='%an <%ae>' 2>/dev/null || true)}
[ -n "$maint" ] || { echo "deb: set DEB_MAINTAINER='Name <address>'" >&2; exit 2; }
root=$build/deb/root
rm -rf "$build/deb"
mkdir -p "$root/DEBIAN"
install -D -m 0755 "$build/wattage" "$root/usr/bin/wattage"
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$root/usr/bin/wattage"
install -D -m 0644 deploy/systemd/wattage.service "$root/lib/systemd/system/wattage.service"
install -D -m 0644 deploy/systemd/wattage.sysusers "$root/usr/lib/sysusers.d/wattage.conf"
install -D -m 0644 deploy/systemd/wattage.tmpfiles "$root/usr/lib/tmpfiles.d/wattage.conf"
install -D -m 0644 deploy/systemd/60-wattage-rapl.rules "$root/lib/udev/rules.d/60-wattage-rapl.rules"
install -D -m 0644 deploy/wattage.yaml "$root/etc/wattage/wattage.yaml"
install -D -m 0644 "$build/man/wattage.1.gz" "$root/usr/share/man/man1/wattage.1.gz"
install -D -m 0644 "$build/man/wattage.yaml.5.gz" "$root/usr/share/man/man5/wattage.yaml.5.gz"
install -D -m 0644 deploy/bash-completion/wattage "$root/usr/share/bash-completion/completions/wattage"
for f in deploy/standards/*.json; do # the dated schema files of `wattage report --standard`
    install -D -m 0644 "$f" "$root/usr/share/wattage/standards/$(basename "$f")"
done
install -d -m 0755 "$root/var/lib/wattage" # 0750 and its owner: postinst
doc=$root/usr/share/doc/wattage
install -D -m 0644 deploy/debian/copyright "$doc/copyright"
{
    echo "wattage ($version) unstable; urgency=medium"
    echo
    echo "  * Release $version."
    echo
    echo " -- $maint  $(date -R -u -d @"${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n >"$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"
install -m 0755 deploy/debian/postinst deploy/debian/postrm "$root/DEBIAN/"
echo /etc/wattage/wattage.yaml >"$root/DEBIAN/conffiles"

# Depends: the packages of the shared libraries the binary links (as dpkg-shlibdeps would find).
deps=$(ldd "$build/wattage" | awk '/=> \//{print $3}' | while read -r lib; do
    dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || true
done | cut -d: -f1 | sort -u | paste -sd, - | sed 's/,/, /g')
# Recommends: the facility protocols' libraries (net-snmp, libmodbus, FreeIPMI), librdkafka and
# libcurl. The binary does not link them: it loads each with dlopen when a section needs it
# (src/collect/facility.c, src/serve/kafka_lib.c, src/core/curl_lib.c) and, without it, says
# which package that section needs. apt installs them by default; a --no-install-recommends
# install runs without.
recs="libsnmp40, libmodbus5, libfreeipmi17, librdkafka1, libcurl4"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CTRL
Package: wattage
Version: $version
Architecture: $arch
Maintainer: $maint
Installed-Size: $size
Depends: $deps, adduser
Recommends: $recs
Section: admin
Priority: optional
Description: energy auditor for AI clusters
 One daemon per node measures GPU energy through NVML, CPU energy through
 RAPL and the facility's power through SNMP, Redfish and Modbus, keeps it in
 an SQLite store, and serves Prometheus metrics and an HTTP API with jobs,
 alerts, facility KPIs and carbon accounting.
CTRL
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | sort |
    xargs md5sum >DEBIAN/md5sums)
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles" "$root/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$root" "$build/wattage_${version}_$arch.deb" >/dev/null
echo "$build/wattage_${version}_$arch.deb"
