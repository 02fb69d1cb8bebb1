# bench/minmedmax.awk: min / median / max per benchmark and metric of Go
# benchmark result lines (name, iterations, then value-unit pairs), in the
# order they first appear; a name's -GOMAXPROCS suffix is dropped.
#
#   awk -f bench/minmedmax.awk results.txt
$1 ~ /^Benchmark/ && NF > 3 {
	name = $1; sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i += 2) { key = name " " $(i+1); v[key] = v[key] " " $i; if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
}
END {
	for (k = 1; k <= n; k++) {
		key = order[k]; m = split(substr(v[key], 2), xs, " ")
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (xs[j] + 0 < xs[i] + 0) { t = xs[i]; xs[i] = xs[j]; xs[j] = t }
		printf "%-80s %s / %s / %s\n", key, xs[1], xs[int((m + 1) / 2)], xs[m]
	}
}
