#!/usr/bin/env python3
"""Planted placement bugs in real ExecuTorch programs, with the expectation computed here.

For each program (a .pte), with flatc turning it into JSON and back:
 1. The importer's plan (tlsan import executorch) is cross-checked against flatc's own
    reading of the file: every planned tensor is in the plan with its arena, offset and
    bytes (sizes x element size), and every op touches exactly the planned tensors among
    its instruction's arguments (tensor lists expanded).
 2. Each root A with bytes is moved (in the .pte, by rewriting its allocation_info) onto
    the placement of the first root B live at the same time; the checker must report
    exactly the live-overlap pairs a brute force over the imported plan gives (every two
    roots of one arena whose byte ranges and lifetimes intersect). Lifetimes come from the
    plan's ops by brute force: the steps of every op touching the root or one of its views,
    -1 for inputs, n for outputs, both for constants.
 3. A is moved onto the first root C live at another time whose move the brute force
    expects to be clean; the checker must exit 0.
Prints one line per program and exits 1 on any disagreement.
usage: overlap.py TLSAN FLATC SCHEMA_DIR WORKDIR PROGRAM.pte...
(SCHEMA_DIR: where ExecuTorch's own program.fbs and scalar_type.fbs are)
"""
import json
import os
import subprocess
import sys

ELEMENT_BYTES = {"BYTE": 1, "CHAR": 1, "SHORT": 2, "INT": 4, "LONG": 8, "HALF": 2, "FLOAT": 4,
                 "DOUBLE": 8, "BOOL": 1, "QINT8": 1, "QUINT8": 1, "QINT32": 4, "BFLOAT16": 2,
                 "QUINT4X2": 1, "QUINT2X4": 1, "BITS16": 2, "FLOAT8E5M2": 1, "FLOAT8E4M3FN": 1,
                 "FLOAT8E5M2FNUZ": 1, "FLOAT8E4M3FNUZ": 1, "UINT16": 2, "UINT32": 4,
                 "UINT64": 8}


def run(cmd, ok=(0,)):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in ok:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
    return p


def to_json(flatc, schema, pte, work):
    run([flatc, "--json", "--strict-json", "--raw-binary", "-o", work,
         os.path.join(schema, "program.fbs"), "--", pte])
    base = os.path.splitext(os.path.basename(pte))[0]
    with open(os.path.join(work, base + ".json")) as f:
        return json.load(f)


def to_pte(flatc, schema, program, work, name):
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        json.dump(program, f)
    run([flatc, "-b", "-o", work, os.path.join(schema, "program.fbs"), path])
    return os.path.join(work, name + ".pte")


def planned(method):
    """value index -> (memory_id, offset, bytes) for every planned tensor, per flatc."""
    out = {}
    for i, v in enumerate(method.get("values", [])):
        if v.get("val_type") != "Tensor" or "allocation_info" not in v["val"]:
            continue
        t = v["val"]
        a = t["allocation_info"]
        n = ELEMENT_BYTES[t.get("scalar_type", "BYTE")]
        for d in t.get("sizes", []):
            n *= d
        off = a.get("memory_offset_low", 0) + (a.get("memory_offset_high", 0) << 32)
        out[i] = (a.get("memory_id", 0), off, n)
    return out


def touched(method, args):
    """The planned value indices among instruction arguments, lists expanded."""
    vals = method["values"]
    seen = set()
    for a in args:
        v = vals[a]
        if v.get("val_type") in ("TensorList", "OptionalTensorList"):
            seen.update(i for i in v["val"].get("items", []) if i >= 0)
        else:
            seen.add(a)
    p = planned(method)
    return {i for i in seen if i in p}


def cross_check(program, plan):
    method = program["execution_plan"][0]
    p = planned(method)
    tensors = {t["name"]: t for t in plan["tensors"]}
    if sorted(tensors) != sorted("v%d" % i for i in p):
        return "tensors %s, flatc's planned values %s" % (sorted(tensors), sorted(p))
    for i, (mem, off, n) in p.items():
        t = tensors["v%d" % i]
        root = t
        while "view_of" in root:
            root = tensors[root["view_of"]]
        if t["bytes"] != n or root["arena"] != "mem%d" % mem or (
                "view_of" not in t and root["offset"] != off):
            return "v%d: plan %s, flatc (mem %d, offset %d, %d bytes)" % (i, t, mem, off, n)
    instrs = [ins for c in method["chains"] for ins in c["instructions"]]
    if len(instrs) != len(plan["ops"]):
        return "%d ops for %d instructions" % (len(plan["ops"]), len(instrs))
    for k, (ins, op) in enumerate(zip(instrs, plan["ops"])):
        args = ins["instr_args"].get("args", [])
        want = {"v%d" % i for i in touched(method, args)}
        got = set(op.get("reads", [])) | set(op.get("writes", []))
        if ins["instr_args_type"] in ("KernelCall", "DelegateCall") and want != got:
            return "op %d (%s): touches %s, its arguments' planned tensors are %s" % (
                k, op["name"], sorted(got), sorted(want))
    return None


def lifetimes(plan):
    """Root name -> (first, last) step, by brute force over the ops."""
    tensors = {t["name"]: t for t in plan["tensors"]}

    def root_of(name):
        while "view_of" in tensors[name]:
            name = tensors[name]["view_of"]
        return name

    n = len(plan["ops"])
    steps = {}
    for name, t in tensors.items():
        r = root_of(name)
        s = steps.setdefault(r, set())
        if t.get("input") or t.get("constant"):
            s.add(-1)
        if t.get("output") or t.get("constant"):
            s.add(n)
    for k, op in enumerate(plan["ops"]):
        for name in op.get("reads", []) + op.get("writes", []):
            steps[root_of(name)].add(k)
    return {r: (min(s), max(s)) for r, s in steps.items() if s}


def expected_findings(plan):
    """{(kind, tensors)}: live-overlap pairs, and out-of-bounds roots (past their arena)."""
    life = lifetimes(plan)
    roots = [t for t in plan["tensors"] if "arena" in t]
    arena_bytes = {a["name"]: a["bytes"] for a in plan["arenas"]}
    pairs = {("out-of-bounds", (t["name"],)) for t in roots
             if t["offset"] + t["bytes"] > arena_bytes[t["arena"]]}
    for i, a in enumerate(roots):
        for b in roots[i + 1:]:
            if a["arena"] != b["arena"] or not a["bytes"] or not b["bytes"]:
                continue
            if a["offset"] >= b["offset"] + b["bytes"] or b["offset"] >= a["offset"] + a["bytes"]:
                continue
            la, lb = life.get(a["name"]), life.get(b["name"])
            if la and lb and not (la[1] < lb[0] or lb[1] < la[0]):
                pairs.add(("live-overlap", tuple(sorted((a["name"], b["name"])))))
    return pairs


def checker_findings(tlsan, pte):
    p = run([tlsan, "check", "--from", "executorch", "--format", "json", pte], ok=(0, 1))
    report = json.loads(p.stdout)
    return p.returncode, {(f["kind"], tuple(sorted(f["tensors"]))) for f in report["findings"]}


def imported(tlsan, pte):
    return json.loads(run([tlsan, "import", "executorch", pte]).stdout)


def main():
    tlsan, flatc, schema, work = sys.argv[1:5]
    failed = 0
    for pte in sys.argv[5:]:
        base = os.path.splitext(os.path.basename(pte))[0]
        program = to_json(flatc, schema, pte, work)
        plan = imported(tlsan, pte)
        why = cross_check(program, plan)
        if why:
            print("FAIL: %s: importer and flatc disagree: %s" % (base, why))
            failed += 1
            continue
        life = lifetimes(plan)
        roots = [t for t in plan["tensors"] if "arena" in t and t["bytes"] and t["name"] in life]
        if len(roots) < 2:
            print("%s: %d planned root(s) with bytes: nothing to move" % (base, len(roots)))
            continue
        moved = clean = 0
        for a in roots:
            la = life[a["name"]]
            live = [b for b in roots if b is not a and not (life[b["name"]][1] < la[0] or la[1] < life[b["name"]][0])]
            other = [b for b in roots if b is not a and b not in live]
            ia = int(a["name"][1:])
            for b, want_clean in ([(live[0], False)] if live else []) + [(c, True) for c in other]:
                prog = json.loads(json.dumps(program))
                info = prog["execution_plan"][0]["values"][ia]["val"]["allocation_info"]
                info["memory_id"] = int(b["arena"][3:])
                info["memory_offset_low"] = b["offset"] & 0xFFFFFFFF
                info["memory_offset_high"] = b["offset"] >> 32
                mutated = to_pte(flatc, schema, prog, work, "%s.%s-on-%s" % (base, a["name"], b["name"]))
                mplan = imported(tlsan, mutated)
                want = expected_findings(mplan)
                if want_clean and want:
                    continue  # a move onto a dead root that still hits a live neighbour
                rc, got = checker_findings(tlsan, mutated)
                if want_clean:
                    if rc != 0:
                        print("FAIL: %s: %s onto %s (live at another time): exit %d, %s" % (
                            base, a["name"], b["name"], rc, sorted(got)))
                        failed += 1
                    clean += 1
                    break
                pair = ("live-overlap", tuple(sorted((a["name"], b["name"]))))
                if got != want or pair not in want or rc != 1:
                    print("FAIL: %s: %s onto %s: checker %s (exit %d), expected %s" % (
                        base, a["name"], b["name"], sorted(got), rc, sorted(want)))
                    failed += 1
                moved += 1
        print("%s: %d roots, %d moved onto a live root (exact findings), %d onto a dead one "
              "(clean)" % (base, len(roots), moved, clean))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
