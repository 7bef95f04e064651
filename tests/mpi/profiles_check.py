#!/usr/bin/env python3
"""Check --pprof and --speedscope files against the --folded file of the same run.

profiles_check.py pprof DECODED.txt FOLDED HOST HZ PIDS   (DECODED: protoc --decode's text)
profiles_check.py speedscope FILE.json SCHEMA.json FOLDED HZ

The decoding is protoc's and jsonschema's; this only reads protoc's text format
(nested "name { ... }" blocks and "key: value" lines) into dicts and lists.
Prints one line per failed check, exits 1 if any.
"""
import json
import re
import sys

bad = []


def check(ok, what):
    if not ok:
        bad.append(what)


def folded_counts(path):
    """rank -> samples, and every frame seen, from the folded file."""
    per_rank, frames = {}, set()
    for line in open(path):
        line = line.rstrip("\n")
        if not line:
            continue
        stack, count = line.rsplit(" ", 1)
        parts = stack.split(";")
        rank = int(parts[1][len("rank "):])
        per_rank[rank] = per_rank.get(rank, 0) + int(count)
        frames.update(parts[2:])
    return per_rank, frames


def text_format(path):
    """protoc's text format into nested dicts of lists."""
    root, stack = {}, []
    cur = root
    for raw in open(path):
        line = raw.strip()
        if not line:
            continue
        if line.endswith("{"):
            node = {}
            cur.setdefault(line[:-1].strip(), []).append(node)
            stack.append(cur)
            cur = node
        elif line == "}":
            cur = stack.pop()
        else:
            key, value = line.split(":", 1)
            value = value.strip()
            if value.startswith('"'):
                value = json.loads(value) if "\\" not in value else \
                    value[1:-1].encode().decode("unicode_escape")
            else:
                value = int(value)
            cur.setdefault(key, []).append(value)
    return root


def one(d, key, default=0):
    return d.get(key, [default])[0]


def pprof(decoded, folded, host, hz, pids):
    p = text_format(decoded)
    strings = p.get("string_table", [])
    check(strings and strings[0] == "", "string_table[0] is not empty")
    types = [(strings[one(v, "type")], strings[one(v, "unit")]) for v in p["sample_type"]]
    check(types == [("samples", "count"), ("cpu", "nanoseconds")], "sample types %s" % types)
    period = round(1e9 / hz)
    check(one(p, "period") == period, "period %s, not %d" % (one(p, "period"), period))
    pt = p["period_type"][0]
    check((strings[one(pt, "type")], strings[one(pt, "unit")]) == ("cpu", "nanoseconds"),
          "period type")
    comments = [strings[c] for c in p.get("comment", [])]
    check(any("an estimate from the sampling rate" in c for c in comments),
          "no comment says the cpu values are an estimate: %s" % comments)
    funcs = {one(f, "id"): strings[one(f, "name")] for f in p["function"]}
    names = list(funcs.values())
    check(len(names) == len(set(names)), "functions are not deduplicated")
    locs = {one(l, "id"): funcs[one(l["line"][0], "function_id")] for l in p["location"]}
    check(len(locs) == len(funcs), "locations are not one per function")
    per_rank, frames = folded_counts(folded)
    check(set(names) == frames, "functions %d, folded frames %d" % (len(names), len(frames)))
    got, threads = {}, {}
    for s in p["sample"]:
        labels = {}
        for l in s.get("label", []):
            k = strings[one(l, "key")]
            labels[k] = strings[one(l, "str")] if "str" in l else one(l, "num")
        for k in ("rank", "host", "thread", "pid"):
            check(k in labels, "a sample has no %s label" % k)
        if not all(k in labels for k in ("rank", "host", "thread", "pid")):
            continue
        check(labels["host"] == host, "host label %s" % labels["host"])
        check(re.fullmatch(r"[0-9]+", labels["thread"]) is not None,
              "thread label %s" % labels["thread"])
        check(labels["pid"] == pids[labels["rank"]], "rank %d's pid label" % labels["rank"])
        v = s["value"]
        check(v[1] == v[0] * period, "cpu value is not count x period")
        got[labels["rank"]] = got.get(labels["rank"], 0) + v[0]
        for loc in s["location_id"]:
            threads.setdefault(locs[loc], set()).add(labels["thread"])
    check(got == per_rank, "samples per rank: pprof %s, folded %s" % (got, per_rank))
    return threads


def speedscope(path, schema, folded, hz):
    import jsonschema
    doc = json.load(open(path))
    jsonschema.validate(doc, json.load(open(schema)))
    period = round(1e9 / hz)
    frames = [f["name"] for f in doc["shared"]["frames"]]
    check(len(frames) == len(set(frames)), "speedscope frames are not deduplicated")
    per_rank, folded_frames = folded_counts(folded)
    check(set(frames) == folded_frames, "speedscope frames differ from the folded ones")
    got = {}
    for prof in doc["profiles"]:
        check(prof["type"] == "sampled" and prof["unit"] == "nanoseconds", "profile type")
        rank = int(re.match(r"rank ([0-9]+) ", prof["name"]).group(1))
        check(rank not in got, "rank %d has two profiles" % rank)
        check(sum(prof["weights"]) == prof["endValue"], "endValue is not the weights' sum")
        got[rank] = sum(prof["weights"]) // period
        check(len(prof["samples"]) == len(prof["weights"]), "samples and weights differ")
    check(got == per_rank, "samples per rank: speedscope %s, folded %s" % (got, per_rank))


if __name__ == "__main__":
    if sys.argv[1] == "pprof":
        pids = {i: int(p) for i, p in enumerate(sys.argv[6].split(","))}
        threads = pprof(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), pids)
        # The threads with stuck_here in their stacks and those with short_lived (a
        # thread created in the window) are not the same.
        if len(sys.argv) > 7:
            a, b = sys.argv[7].split(",")
            check(a in threads and b in threads and not threads[a] & threads[b],
                  "%s and %s are not on threads of their own: %s" % (a, b, threads))
    else:
        speedscope(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    for b in bad:
        print("FAIL:", b)
    sys.exit(1 if bad else 0)
