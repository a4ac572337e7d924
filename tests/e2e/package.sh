#!/bin/sh
# Packaging a user can install: `cpack -G DEB` from the build makes a .deb
# that holds the binary, the man pages, the completion, the dashboards,
# the alert rules, the Python recorder and the systemd unit; it depends on
# the packages of every library the binary links (dpkg -S of each); and
# runmon demo runs from its files. Then `pip install ./contrib/python`
# into a fresh venv with no index imports runmon_record from the venv.
# Installing the .deb as root is .ci/run's last step.
# Usage: package.sh RUNMON BUILD_DIR SRC_DIR
set -eu
build=$2
src=$3
. "$(dirname "$0")/common.sh"
command -v cpack >/dev/null && command -v dpkg-deb >/dev/null || fail "cpack or dpkg-deb is missing"
(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1) \
	|| fail "cpack: $(tail -5 "$tmp/cpack.log")"
deb=$(ls "$tmp"/pkg/runmon_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no .deb written: $(tail -5 "$tmp/cpack.log")"
dpkg-deb -c "$deb" | awk '{print $NF}' >"$tmp/files"
for f in ./usr/bin/runmon ./usr/share/man/man1/runmon.1 ./usr/share/man/man1/runmon-watch.1 \
	./usr/share/bash-completion/completions/runmon ./usr/share/zsh/vendor-completions/_runmon \
	./usr/share/fish/vendor_completions.d/runmon.fish ./usr/share/runmon/dashboards/runmon.json \
	./usr/share/runmon/dashboards/runmon-alerts.yml ./usr/share/runmon/python/runmon_record.py ./usr/share/runmon/python/runmon_sampler.py \
	./usr/share/runmon/python/pyproject.toml ./usr/share/runmon/python/_build/runmon_build.py \
	./usr/lib/systemd/system/runmon-watch.service ./usr/share/doc/runmon/docs/formats.md; do
	grep -qx "$f" "$tmp/files" || fail "the .deb lacks $f"
done
depends=$(dpkg-deb -f "$deb" Depends)
# every library the binary links comes from a package the .deb depends on
# (the toolchain's own runtimes, as a sanitizer build links, aside)
bin=$build/runmon # the binary itself, not a valgrind wrapper
ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
	pkg=$(dpkg -S "$lib" 2>/dev/null | head -1 | cut -d: -f1)
	[ -n "$pkg" ] || pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -1 | cut -d: -f1)
	case $pkg in "" | libc6 | libgcc-s1 | libasan* | libubsan* | libstdc++*) continue ;; esac
	# only runmon's direct libraries are named; theirs come with them
	objdump -p "$bin" | grep -q "NEEDED *$(basename "$lib")" || continue
	echo "$depends" | grep -q "\b$pkg\b" || { echo "$pkg ($lib)" >>"$tmp/missing"; }
done
[ ! -s "$tmp/missing" ] || fail "the .deb does not depend on: $(cat "$tmp/missing") (Depends: $depends)"
dpkg-deb -x "$deb" "$tmp/root"
"$tmp/root/usr/bin/runmon" --db "$tmp/d.db" demo --steps 2000 >"$tmp/demo.out" || fail "runmon demo from the .deb's files"
grep -q "demo-homogeneous" "$tmp/demo.out" || fail "demo output: $(head -3 "$tmp/demo.out")"
grep -q "^ExecStart=.*/usr/bin/runmon watch" "$tmp/root/usr/lib/systemd/system/runmon-watch.service" || fail "unit"

# The recorder as a package, as the README says: `pip install
# ./contrib/python` in a fresh venv with no index reachable (issue 50.1).
# The in-tree build backend needs nothing from an index: no setuptools, no
# --no-build-isolation, no system site packages. Every python3 on PATH
# (Debian's, and another such as pyenv's first on PATH) does it.
for py in $(which -a python3 /usr/bin/python3 | xargs -n1 readlink -f | sort -u); do
	v=$tmp/venv-$(echo "$py" | tr -c 'a-z0-9\n' _)
	"$py" -m venv "$v" >/dev/null 2>&1 || fail "$py -m venv (python3-venv)"
	PIP_INDEX_URL=http://127.0.0.1:9/simple PIP_NO_CACHE_DIR=1 "$v/bin/python" -m pip install -q "$src/contrib/python" \
		>"$tmp/pip.log" 2>&1 || fail "$py: pip install ./contrib/python offline: $(tail -5 "$tmp/pip.log")"
	where=$(cd "$tmp" && "$v/bin/python" -c 'import runmon_record, runmon_sampler; print(runmon_sampler.__file__)') \
		|| fail "$py: the venv does not import runmon_record and runmon_sampler"
	case $where in "$v/"*) ;; *) fail "$py: runmon_sampler imported from $where, not the venv" ;; esac
	cmp -s "$where" "$src/contrib/python/runmon_sampler.py" || fail "$py: the installed sampler differs from the source"
	"$v/bin/python" -m pip uninstall -y -q runmon-record >/dev/null 2>&1 || fail "$py: pip uninstall"
	[ ! -e "$where" ] || fail "$py: pip uninstall left $where (RECORD)"
	# the same from what the .deb installs (a copy: pip builds in place)
	cp -r "$tmp/root/usr/share/runmon/python" "$tmp/deb-python"
	PIP_INDEX_URL=http://127.0.0.1:9/simple PIP_NO_CACHE_DIR=1 "$v/bin/python" -m pip install -q "$tmp/deb-python" \
		>"$tmp/pip.log" 2>&1 || fail "$py: pip install /usr/share/runmon/python offline: $(tail -5 "$tmp/pip.log")"
	(cd "$tmp" && "$v/bin/python" -c 'import runmon_record, runmon_sampler') || fail "$py: the .deb's recorder does not import"
	"$v/bin/python" -m pip uninstall -y -q runmon-record >/dev/null 2>&1 || fail "$py: pip uninstall"
	rm -rf "$tmp/deb-python"
done
# (the Python tests' own __pycache__ aside: they import the modules from there)
[ -z "$(cd "$src/contrib/python" && ls -A | grep -v -x -e _build -e pyproject.toml -e runmon_record.py -e runmon_sampler.py -e __pycache__)" ] \
	|| fail "the build wrote into the source tree: $(ls -A "$src/contrib/python")"
echo "package: $(basename "$deb") holds $(wc -l <"$tmp/files") entries, depends on $depends; demo runs from it; pip installs the recorder"
