#!/bin/bash
# Builds the unwindd Debian package with dpkg-deb (//packaging:deb runs it;
# docs/deployment.md "The Debian package" lists what goes where).
#
#   build_deb.sh OUT.deb VERSION KEY=PATH...
#
# KEYs: unwind unwind_remote unwind_debuginfod unwind_coredump unwindd demo
# man1 man8 service socket sysusers copyright changelog_debian changelog
# control postinst prerm postrm readme lintian_overrides, upstream_version
# (optional: the VERSION file), doc (repeatable: docs/ files, given
# as paths that end in docs/...), completion (optional).
set -euo pipefail
out=$1 version=$2
shift 2
declare -A f
docs=()
for kv in "$@"; do
  k=${kv%%=*} v=${kv#*=}
  if [ "$k" = doc ]; then docs+=("$v"); else f[$k]=$v; fi
done

# The package's version is the Debian changelog's newest entry.
logged=$(dpkg-parsechangelog -l "${f[changelog_debian]}" -S Version)
[ "$logged" = "$version" ] ||
  { echo "build_deb: version $version, but changelog.Debian's newest entry is $logged" >&2; exit 1; }

# And its upstream part is the project's VERSION file, when given.
if [ -n "${f[upstream_version]:-}" ]; then
  upstream=$(tr -d ' \n' < "${f[upstream_version]}")
  [ "${version%-*}" = "$upstream" ] ||
    { echo "build_deb: version $version, but VERSION says $upstream" >&2; exit 1; }
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/unwindd-deb.XXXXXX")
trap 'chmod -R u+w "$root"; rm -rf "$root"' EXIT
pkg=$root/pkg
d() { install -d -m 0755 "$pkg/$1"; }
bin() { install -m 0755 "$1" "$pkg/$2"; strip --strip-unneeded --remove-section=.comment --remove-section=.note "$pkg/$2" 2>/dev/null || strip --strip-unneeded "$pkg/$2"; }
data() { install -m 0644 "$1" "$pkg/$2"; }
gz() { gzip -9n < "$1" > "$pkg/$2"; chmod 0644 "$pkg/$2"; }

# The CLI and its helpers side by side: unwind execs unwind_remote,
# unwind_debuginfod and unwind_coredump from its own directory, and finds
# the demo program at ../testdata/demo.
d usr/lib/unwindd/bin
d usr/lib/unwindd/testdata
for b in unwind unwind_remote unwind_debuginfod unwind_coredump; do
  bin "${f[$b]}" usr/lib/unwindd/bin/$b
done
bin "${f[demo]}" usr/lib/unwindd/testdata/demo
d usr/bin
ln -s ../lib/unwindd/bin/unwind "$pkg/usr/bin/unwind"
d usr/sbin
bin "${f[unwindd]}" usr/sbin/unwindd

d usr/share/man/man1
d usr/share/man/man8
gz "${f[man1]}" usr/share/man/man1/unwind.1.gz
gz "${f[man8]}" usr/share/man/man8/unwindd.8.gz

# Units: Debian 12 keeps packaged units in /lib/systemd/system. The unit in
# the repository starts /usr/local/bin/unwindd (a manual install); the
# package's starts its own.
d lib/systemd/system
sed 's|^ExecStart=/usr/local/bin/unwindd|ExecStart=/usr/sbin/unwindd|' "${f[service]}" > "$pkg/lib/systemd/system/unwindd.service"
grep -q '^ExecStart=/usr/sbin/unwindd ' "$pkg/lib/systemd/system/unwindd.service" ||
  { echo "build_deb: unwindd.service has no ExecStart=/usr/local/bin/unwindd to rewrite" >&2; exit 1; }
chmod 0644 "$pkg/lib/systemd/system/unwindd.service"
data "${f[socket]}" lib/systemd/system/unwindd.socket
d usr/lib/sysusers.d
data "${f[sysusers]}" usr/lib/sysusers.d/unwindd.conf

if [ -n "${f[completion]:-}" ]; then
  d usr/share/bash-completion/completions
  data "${f[completion]}" usr/share/bash-completion/completions/unwind
fi

doc=usr/share/doc/unwindd
d $doc
d $doc/docs
data "${f[copyright]}" $doc/copyright
gz "${f[changelog_debian]}" $doc/changelog.Debian.gz
gz "${f[changelog]}" $doc/changelog.gz
data "${f[readme]}" $doc/README.md
# docs/ keeps its layout (README.md and the documents link to each other).
for p in "${docs[@]}"; do
  rel=${p##*docs/}
  install -d -m 0755 "$pkg/$doc/docs/$(dirname "$rel")"
  install -m 0644 "$p" "$pkg/$doc/docs/$rel"
done

# Where lintian finds the reasons for the tags this package overrides.
d usr/share/lintian/overrides
data "${f[lintian_overrides]}" usr/share/lintian/overrides/unwindd

# Control files.
d DEBIAN
for s in postinst prerm postrm; do install -m 0755 "${f[$s]}" "$pkg/DEBIAN/$s"; done
arch=$(dpkg --print-architecture)
# Shared libraries the dynamic programs need (unwind itself is static).
mkdir -p "$root/src/debian"
printf 'Source: unwindd\n\nPackage: unwindd\nArchitecture: any\n' > "$root/src/debian/control"
depends=$(cd "$root/src" && dpkg-shlibdeps -O --warnings=0 \
  "$pkg/usr/sbin/unwindd" "$pkg/usr/lib/unwindd/bin/unwind_remote" \
  "$pkg/usr/lib/unwindd/bin/unwind_debuginfod" "$pkg/usr/lib/unwindd/bin/unwind_coredump" \
  "$pkg/usr/lib/unwindd/testdata/demo" | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "build_deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@SIZE@|$size|" \
  -e "s|@DEPENDS@|$depends|" "${f[control]}" > "$pkg/DEBIAN/control"
(cd "$pkg" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum) > "$pkg/DEBIAN/md5sums"
chmod 0644 "$pkg/DEBIAN/control" "$pkg/DEBIAN/md5sums"

# Reproducible: every file dated like the changelog's entry.
epoch=$(dpkg-parsechangelog -l "${f[changelog_debian]}" -S Timestamp)
find "$pkg" -exec touch -h -d "@$epoch" {} +
SOURCE_DATE_EPOCH=$epoch dpkg-deb --root-owner-group -Zxz --build "$pkg" "$out" >/dev/null
