# The checks of one synchronized window (sourced by tests/mpi and tests/cluster):
# the tools' own records (the example tool's logs) against the launcher's report.
#
# Exact properties, whatever the machine's load:
#  - every tool_attach at or after the window's start time, every tool_detach at
#    or after its stop time (the tools' clocks);
#  - per target, the report's tool time and the tool's own record are in the
#    order the report's kind promises: a "measured" time is our agent's stamp,
#    taken just before it calls the tool (<= the tool's record); a "bound" is
#    the end of ROCm's call, inside which the tool ran (>= the tool's record);
#  - the report's skew is the spread of its own per-target times (on bounds, each
#    target's call from its start to its end), and on ROCm's side alone at least
#    the tools' own spread: a bound.
# Within 1 us (jq, which reads the report, holds numbers as doubles, and
# CLOCK_REALTIME's nanoseconds need 61 bits), plus, for a node other than
# rank 0's, the error bound of its clock offset (half the round trip over which
# it was estimated, summed along the launcher's tree from rank 0):
# the report's times are in rank 0's clock, corrected by that estimate, and a
# node starts at rank 0's start time turned into its own clock by it.
# Loose sanity bounds (an order of magnitude above the figures): spreads and
# window lengths that reveal a broken synchronization (the tools called before
# the start, or a window 150 ms too long), not speed: the tight figures are
# bench/'s (bench/run.sh: skew, both target sides). Under a sanitizer
# (ROCATTACH_SANITIZED) the launcher's calls run several times slower, so the
# loose bounds are said, not checked; the exact properties are checked there too.
#
# window_checks CHECK DIR REPORT N MS [W]: CHECK is the harness's
# "CHECK DESCRIPTION COMMAND..." function; DIR the tools' logs; N targets,
# a window of MS ms, window W of the report (default 0).
WINDOW_SLACK_MS=${WINDOW_SLACK_MS:-50}

# window_said DESCRIPTION COMMAND...: a loose bound under a sanitizer: whether it held, said.
window_said() {
	local what=$1
	shift
	if "$@" >/dev/null; then echo "note: held: $what"; else echo "note: did not hold: $what"; fi
}

# The tools' records as "host pid event ns" lines (host and pid from the log's name).
tool_records() {
	local f base
	for f in "$1"/rocattach-tool.*.log; do
		[ -e "$f" ] || continue
		base=${f##*/rocattach-tool.}
		base=${base%.log}
		awk -v h="${base%.*}" -v p="${base##*.}" '$1 ~ /^tool_(at|de)tach$/ {
			for (i = 2; i <= NF; i++) if ($i ~ /^ns=/) print h, p, $1, substr($i, 4) }' "$f"
	done
}

# The report's targets of window W as
# "host pid attach_ns attach_kind detach_ns detach_kind twice_the_node's_clock_bound_ns"
# (pid as the target sees it: the node's pid namespace when the report knows it).
report_times() {
	jq -r --argjson w "$2" '.windows[$w].nodes[] | .host as $h |
		(if .clock_bound_ns != null then 2 * .clock_bound_ns else (.clock_rtt_ns // 0) end) as $rtt |
		.targets[] | [$h, (.nspid // .pid), (.attach.tool_ns // "null"),
		 (.attach.tool_ns_kind // "null"), (.detach.tool_ns // "null"),
		 (.detach.tool_ns_kind // "null"), $rtt] | join(" ")' "$1"
}

# Per target: the report's times keep their promised order against the tools' records.
# Reads the two tables above (records first, then "--", then the report's).
times_in_order() {
	awk '$0 == "--" { rep = 1; next }
		!rep { t[$1, $2, $3] = $4; next }
		{ n++
		  for (k = 0; k < 2; k++) {
			ev = k ? "tool_detach" : "tool_attach"; r = k ? $5 : $3; kind = k ? $6 : $4
			if (!(($1, $2, ev) in t) || r == "null") { bad++; print "no time:", $0 > "/dev/stderr"; continue }
			tol = 1000 + $7 / 2
			if (kind == "measured" && r - t[$1, $2, ev] > tol) bad++
			else if (kind == "bound" && t[$1, $2, ev] - r > tol) bad++
			else if (kind != "measured" && kind != "bound") bad++
		  } }
		END { exit !(n > 0 && !bad) }'
}

# step_edges REPORT W attach|detach: the times of that step's skew, one a line: each
# target's tool_ns, and on bounds also its call's start.
step_edges() {
	jq -r --argjson w "$2" --arg k "$3" '.windows[$w].nodes[].targets[] | .[$k] |
		select(. != null and .tool_ns != null) | .tool_ns,
		(select(.tool_ns_kind == "bound") | .call_start_ns // empty)' "$1"
}

# max - min of the integers on stdin, one a line (bash: 64-bit exact; awk and jq
# hold numbers as doubles, 256 ns apart at today's CLOCK_REALTIME).
spread_of() {
	local v lo= hi=
	while read -r v; do
		[ -z "$lo" ] || [ "$v" -lt "$lo" ] && lo=$v
		[ -z "$hi" ] || [ "$v" -gt "$hi" ] && hi=$v
	done
	echo $((${hi:-0} - ${lo:-0}))
}

# on_plan RC REPORT: the run's exit code agrees with its windows. 0 where no
# window is off its plan; 7 where one is, each late start within the loose
# slack. On a loaded 2-core machine a tool can start a few ms past the 10 ms
# tolerance (rm_length_tolerance_ns): the report says so and the run exits 7.
# That is speed, bench/'s figure; a late start past the slack is a broken window.
on_plan() {
	jq -e --argjson rc "$1" --argjson slack $((WINDOW_SLACK_MS * 1000000)) '
		[.windows[] | select(.late.off == true)] as $off |
		($off | length == 0 and $rc == 0) or
		($off | length > 0 and $rc == 7 and all(.late.max_ns == null or .late.max_ns <= $slack))
		' "$2" >/dev/null
}

window_checks() {
	local check=$1 dir=$2 r=$3 n=$4 ms=$5 w=${6:-0} start stop recs reps ta td ra rd
	start=$(jq ".windows[$w].start_ns" "$r")
	stop=$(jq ".windows[$w].stop_ns" "$r")
	recs=$(tool_records "$dir")
	reps=$(report_times "$r" "$w")
	# No record of event e before s, by more than its node's clock tolerance.
	early='$0 == "--" { recs = 1; next } !recs { tol[$1] = 1000 + $7 / 2; next }
		$3 == e && $4 - s < -tol[$1] { bad = 1 } END { exit bad }'
	$check "$n tool_attach and $n tool_detach recorded" test \
		"$(grep -c ' tool_attach ' <<<"$recs")/$(grep -c ' tool_detach ' <<<"$recs")" = "$n/$n"
	$check "every tool_attach at or after the start time" awk -v s="$start" -v e=tool_attach \
		"$early" < <(printf '%s\n--\n%s\n' "$reps" "$recs")
	$check "every tool_detach at or after the stop time" awk -v s="$stop" -v e=tool_detach \
		"$early" < <(printf '%s\n--\n%s\n' "$reps" "$recs")
	$check "per target, the report's times are in their kind's order with the tools'" \
		times_in_order < <(printf '%s\n--\n%s\n' "$recs" "$reps")
	# Each target's interval: its measured time, or on bounds its call from start to end.
	ra=$(step_edges "$r" "$w" attach | spread_of)
	rd=$(step_edges "$r" "$w" detach | spread_of)
	$check "the report's skew is the spread of its targets' times (calls' edges on bounds)" \
		awk -v a="$ra" -v d="$rd" \
		-v s="$(jq -r ".windows[$w].skew | \"\\(.attach_ns) \\(.detach_ns)\"" "$r")" \
		'BEGIN { split(s, k, " "); exit !((k[1] - a) ^ 2 <= 1e6 && (k[2] - d) ^ 2 <= 1e6) }'
	ta=$(awk '$3 == "tool_attach" { print $4 }' <<<"$recs" | spread_of)
	td=$(awk '$3 == "tool_detach" { print $4 }' <<<"$recs" | spread_of)
	# On ROCm's side alone the skew is a bound: never below the tools' own spread.
	if [ "$(jq -r ".windows[$w].skew.basis" "$r")" = bounds ]; then
		$check "the skew, a bound, is at least the tools' own spread" jq -e \
			--argjson a "$ta" --argjson d "$td" ".windows[$w] |
			([.nodes[].clock_bound_ns // 0] | 1000 + 2 * max) as \$t |
			.skew | .skew_kind == \"bound\" and .attach_ns + \$t >= \$a and
			.detach_ns + \$t >= \$d" "$r"
	fi
	echo "window $w: tool_attach spread $((ta / 1000)) us (report $((ra / 1000)) us)," \
		"tool_detach spread $((td / 1000)) us (report $((rd / 1000)) us)"
	local sane=$check
	if [ -n "${ROCATTACH_SANITIZED:-}" ]; then
		echo "note: under $ROCATTACH_SANITIZED the spreads and lengths below are said, not checked"
		sane=window_said
	fi
	$sane "tool_attach and tool_detach spreads under ${WINDOW_SLACK_MS} ms" \
		test "$ta" -lt $((WINDOW_SLACK_MS * 1000000)) -a "$td" -lt $((WINDOW_SLACK_MS * 1000000))
	$sane "every tools' window within $ms ms +-${WINDOW_SLACK_MS} ms" awk \
		-v lo=$((ms - WINDOW_SLACK_MS)) -v hi=$((ms + WINDOW_SLACK_MS)) '
		{ t[$1, $2, $3] = $4; k[$1, $2] = 1 }
		END { for (x in k) { split(x, p, SUBSEP)
			l = (t[p[1], p[2], "tool_detach"] - t[p[1], p[2], "tool_attach"]) / 1e6
			if (l < lo || l > hi) exit 1 } }' <<<"$recs"
	$check "no private variable in any target's environment" \
		bash -c "! grep -h '^tool_' $dir/rocattach-tool.*.log | grep -v 'rocp_attach_env=-'"
}
