#!/usr/bin/env bash
# Check that the source files under src/ depend on each other one way only.
#
# A module is a source file and the header of the same name beside it
# (src/catalog/catalog.c and src/catalog/catalog.h are one module); a header
# or a .def without a source file is a module of its own.  Module A depends
# on module B when a file of A includes a file of B, or when A's object file
# uses a symbol that B's defines (nm), so calls through headers and calls
# without them both count.  The check fails when
#   - the dependencies form a circle (tsort names the modules on it), or
#   - a module depends on one of a layer above its own (LAYERS below; a
#     .def file is rows of data that any layer may include), or
#   - a source file under src/ has more than MAX_LINES lines.
# It reads the object files the build left (make first), and prints nothing
# but "layers: ok ..." when all is well.
#
# Usage: scripts/check_layers.sh [--graph]
#   --graph  print the dependency edges ("a b": a depends on b) and exit
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MAX_LINES=1200

# The layers, top first: a folder may depend on its own and the ones below it.
# The module entry point (src/lance_namespace.c) stands above them all.
LAYERS=(http sql maintenance frame ops model feed access catalog storage json common)

graph_only=0
[[ "${1:-}" == --graph ]] && graph_only=1

mapfile -t sources < <(find src -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' \) | sort)
((${#sources[@]} > 0)) || {
	echo "layers: no sources under src/" >&2
	exit 1
}

# module <file>: the file's module (its path without the extension).
module() { printf '%s\n' "${1%.*}"; }

# layer_rank <module>: 0 for the entry point, else 1 + the folder's place in LAYERS.
layer_rank() {
	local dir="${1#src/}" i
	[[ "$dir" == */* ]] || {
		echo 0
		return
	}
	dir="${dir%%/*}"
	for i in "${!LAYERS[@]}"; do
		[[ "${LAYERS[$i]}" == "$dir" ]] && {
			echo $((i + 1))
			return
		}
	done
	echo -1
}

edges="$(mktemp)"
trap 'rm -f "$edges"' EXIT

# Includes: a quoted include names a file relative to the including file's
# folder (as the compiler finds it first); other names are PostgreSQL's.
for f in "${sources[@]}"; do
	dir="$(dirname "$f")"
	while IFS= read -r inc; do
		target="$(realpath -m --relative-to=. "$dir/$inc")"
		[[ -f "$target" ]] || continue
		a="$(module "$f")" b="$(module "$target")"
		[[ "$a" == "$b" ]] || printf '%s %s\n' "$a" "$b" >>"$edges"
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done

# Calls and data: the module that defines each global symbol, then every
# module's undefined symbols.
mapfile -t objects < <(for f in "${sources[@]}"; do [[ "$f" == *.c ]] && printf '%s\n' "${f%.c}.o"; done)
for o in "${objects[@]}"; do
	[[ -f "$o" ]] || {
		echo "layers: $o is missing: build first (make)" >&2
		exit 1
	}
done
nm -A "${objects[@]}" 2>/dev/null | awk '
	{
		split($1, p, ":"); obj = p[1]; sub(/\.o$/, "", obj)
		type = $(NF - 1); sym = $NF
		if (type == "U") used[obj, sym] = 1
		else if (type ~ /^[TDBRGSVW]$/) def[sym] = obj
	}
	END {
		for (k in used) {
			split(k, q, SUBSEP)
			if ((q[2] in def) && def[q[2]] != q[1]) print q[1], def[q[2]]
		}
	}' >>"$edges"

sort -u -o "$edges" "$edges"

if ((graph_only)); then
	cat "$edges"
	exit 0
fi

status=0

# Circles: tsort prints each loop it breaks, one module a line.
if ! loops="$(tsort "$edges" 2>&1 >/dev/null)" || [[ -n "$loops" ]]; then
	# one line per circle, naming the modules on it
	printf '%s\n' "$loops" | awk '
		/input contains a loop/ { if (line != "") print "layers: a circle through " line; line = ""; next }
		/^tsort: src\// { sub(/^tsort: /, ""); line = (line == "" ? $0 : line ", " $0) }
		END { if (line != "") print "layers: a circle through " line }'
	status=1
fi

# Direction: no module depends on one of a higher layer.
while read -r a b; do
	ra="$(layer_rank "$a")" rb="$(layer_rank "$b")"
	if ((ra < 0)); then
		echo "layers: $a is in no layer (add its folder to LAYERS)"
		status=1
	elif [[ -f "$b.def" ]]; then
		: # a .def is rows of data for a macro, calling nothing: any layer may include it
	elif ((rb >= 0 && rb < ra)); then
		echo "layers: $a depends on $b, a layer above it"
		status=1
	fi
done <"$edges"

# Size: no file past MAX_LINES.
for f in "${sources[@]}"; do
	n="$(wc -l <"$f")"
	if ((n > MAX_LINES)); then
		echo "layers: $f has $n lines (at most $MAX_LINES)"
		status=1
	fi
done

if ((status == 0)); then
	echo "layers: ok ($(wc -l <"$edges") dependencies between $(cut -d' ' -f1,2 --output-delimiter=$'\n' "$edges" | sort -u | wc -l) modules, no circle)"
fi
exit "$status"
