#!/usr/bin/env python3
"""The house's shape as a test (issue 20, STYLE.md section 8).

Usage: check.py SOURCE_ROOT BUILD_ROOT    check the tree and its objects
       check.py --self-test               check the checker on made-up trees

Two graphs over the modules of daemon/ (with daemon/core/), db/ and tui/:
  include graph  read from the #include lines, resolved the way the meson
                 include paths resolve them (BUILD_ROOT/db for generated files);
  call graph     from `nm` on the objects of the fbcore, fbdaemon, fbstore and
                 fbtui static libraries: each undefined symbol goes to the
                 module that defines it.
A module is x.c + x.h; the files of a split module that share its private
header x_int.h (x.c, x_*.c) are one module. Any cycle in either graph fails,
and so does any break of the layering rules (see check_layers). Every run first
runs the self-test (so the check cannot pass by seeing nothing). Exits 0
when clean, 1 on a cycle or a layering break, 2 when it cannot run (no
objects: build BUILD_ROOT first; or the self-test failed).
"""

import collections
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOTS = ("daemon", "db", "tui")
CORE = "daemon/core"
SKIP_DIRS = ("daemon/core/poison",)
LIBS = ("daemon/core/libfbcore.a", "daemon/libfbdaemon.a",
        "db/libfbstore.a", "tui/libfbtui.a")
GENERATED_DIRS = ("db",)

# Where a quoted include is looked for after the including file's own folder:
# each library's meson include path first, then the other folders, so that an
# include the build would refuse (or the poison headers would catch) is still
# named by the file it means.
SEARCH = {
    CORE: [CORE, "daemon", "db", "tui"],
    "daemon": ["daemon", CORE, "db", "tui"],
    "db": ["db", CORE, "daemon", "tui"],
    "tui": ["tui", CORE, "db", "daemon"],
}

# daemon/core/ uses libc, libm and cJSON only: the system headers it may name.
CORE_SYSTEM_HEADERS = set("""
assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h limits.h
locale.h math.h setjmp.h signal.h stdalign.h stdarg.h stdatomic.h stdbool.h
stddef.h stdint.h stdio.h stdlib.h stdnoreturn.h string.h tgmath.h threads.h
time.h uchar.h wchar.h wctype.h
aio.h cpio.h dirent.h dlfcn.h endian.h fcntl.h fnmatch.h ftw.h getopt.h glob.h
grp.h iconv.h langinfo.h libgen.h monetary.h netdb.h nl_types.h poll.h
pthread.h pwd.h regex.h sched.h search.h semaphore.h spawn.h strings.h
syslog.h termios.h ulimit.h unistd.h utime.h wordexp.h
cjson/cJSON.h cJSON.h
""".split())
CORE_SYSTEM_PREFIXES = ("sys/", "arpa/", "netinet/", "net/", "bits/")

# Symbols no library defines (linker, sanitizer and coverage runtimes).
RUNTIME_PREFIXES = ("_GLOBAL_OFFSET_TABLE_", "__asan_", "__ubsan_",
                    "__sanitizer_", "__tsan_", "__lsan_", "__msan_", "__gcov_",
                    "__llvm_", "__fentry__", "__stack_chk_", "__dso_handle")

CLOCK_FUNCS = {"clock_gettime", "gettimeofday", "time", "timespec_get",
               "clock", "ftime", "getrandom", "getentropy", "rand", "rand_r",
               "srand", "random", "srandom", "drand48", "lrand48", "mrand48",
               "arc4random", "arc4random_buf", "arc4random_uniform"}
CLOCK_MODULES = {CORE + "/clock", CORE + "/rng"}

ENGINE = "daemon/engine"
ENGINE_MUST_NOT = ["daemon/call", "daemon/control", "daemon/jobs",
                   "daemon/review_q", "daemon/http"]

MAX_TIES = 6

INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.M)
COMMENT_RE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', re.S)


def warn(msg):
    print("arch: warning: " + msg, file=sys.stderr)


def under(path, folder):
    return path == folder or path.startswith(folder + "/")


def root_of(path):
    """daemon/core, daemon, db or tui: the folder whose rules apply."""
    if under(path, CORE):
        return CORE
    return path.split("/", 1)[0]


def is_daemon_outer(path):
    return under(path, "daemon") and not under(path, CORE)


def strip_comments(text):
    """Blank out comments (keeping newlines, so line numbers hold)."""
    def blank(m):
        s = m.group(0)
        if s.startswith('"'):
            return s
        return re.sub(r"[^\n]", " ", s)
    return COMMENT_RE.sub(blank, text)


# ---------------------------------------------------------------- the tree

class Tree:
    """The source files and their include lines, keyed by path relative to
    SOURCE_ROOT (generated files in BUILD_ROOT/db are keyed as db/NAME)."""

    def __init__(self):
        self.files = {}         # rel path -> [(line, '<' or '"', name)]
        self.generated = set()

    def add(self, rel, text, generated=False):
        text = strip_comments(text)
        incs = []
        for m in INCLUDE_RE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            incs.append((line, m.group(1), m.group(2).strip()))
        self.files[rel] = incs
        if generated:
            self.generated.add(rel)

    @classmethod
    def scan(cls, src, build):
        t = cls()
        for top in ROOTS:
            for d, dirs, names in os.walk(os.path.join(src, top)):
                rd = os.path.relpath(d, src).replace(os.sep, "/")
                dirs[:] = sorted(x for x in dirs
                                 if not any(under(rd + "/" + x, s) for s in SKIP_DIRS))
                for n in sorted(names):
                    if n.endswith((".c", ".h")):
                        with open(os.path.join(d, n), errors="replace") as f:
                            t.add(rd + "/" + n, f.read())
        if build:
            for g in GENERATED_DIRS:
                bd = os.path.join(build, g)
                if not os.path.isdir(bd):
                    continue
                for n in sorted(os.listdir(bd)):
                    rel = g + "/" + n
                    if n.endswith((".c", ".h")) and rel not in t.files:
                        with open(os.path.join(bd, n), errors="replace") as f:
                            t.add(rel, f.read(), generated=True)
        return t

    def resolve(self, rel, kind, name):
        """The project file an include names, or None (a system header)."""
        own = os.path.dirname(rel)
        dirs = SEARCH.get(root_of(rel), list(SEARCH["daemon"]))
        if kind == '"':
            dirs = [own] + dirs
        for d in dirs:
            p = os.path.normpath(os.path.join(d, name)).replace(os.sep, "/")
            if p in self.files:
                return p
        return None

    def modules(self):
        """rel path -> module name (the path without .c/.h)."""
        mod = {}
        for rel in self.files:
            mod[rel] = rel[:-2]
        # A split module: x_int.h, and x.c / x_*.c that include it.
        for rel, incs in self.files.items():
            base = os.path.basename(rel)
            d = os.path.dirname(rel)
            for _, kind, name in incs:
                if kind != '"' or not name.endswith("_int.h"):
                    continue
                target = self.resolve(rel, kind, name)
                if target is None or os.path.dirname(target) != d:
                    continue
                stem = os.path.basename(target)[:-len("_int.h")]
                if base in (stem + ".c", stem + ".h") or base.startswith(stem + "_"):
                    owner = d + "/" + stem
                    mod[rel] = owner
                    mod[target] = owner
        return mod


# ----------------------------------------------------------------- graphs

class Graph:
    """module -> module arrows, each with the reasons that tie it."""

    def __init__(self, kind):
        self.kind = kind
        self.edges = collections.defaultdict(lambda: collections.defaultdict(list))

    def add(self, a, b, tie):
        if a != b and tie not in self.edges[a][b]:
            self.edges[a][b].append(tie)

    def arrows(self):
        return sum(len(v) for v in self.edges.values())

    def ties(self, a, b):
        t = sorted(self.edges[a][b])
        if len(t) > MAX_TIES:
            t = t[:MAX_TIES] + ["+%d more" % (len(t) - MAX_TIES)]
        return ", ".join(t)


def include_graph(tree, mod):
    g = Graph("include")
    system = []         # (rel, line, name) of every system include
    for rel in sorted(tree.files):
        for line, kind, name in tree.files[rel]:
            target = tree.resolve(rel, kind, name)
            if target is None:
                if kind == "<":
                    system.append((rel, line, name))
                elif rel not in tree.generated:
                    warn('%s:%d: "%s" names no file in %s' % (rel, line, name, ", ".join(ROOTS)))
                continue
            g.add(mod[rel], mod.get(target, target[:-2]),
                  "%s:%d includes %s" % (rel, line, target))
    return g, system


def parse_nm(text):
    """From `nm -P` output: {defined global: True when it is data}, and the
    set of undefined symbols."""
    defined, undefined = {}, set()
    for ln in text.splitlines():
        f = ln.split()
        if len(f) < 2 or len(f[1]) != 1:
            continue
        sym, t = f[0], f[1]
        if t in "Uwv":
            undefined.add(sym)
        elif t.isupper() or t == "u":
            defined[sym] = t in "BCDGRSV"
    return defined, undefined


def call_graph(objects, mod_of_source):
    """objects: [(source rel path, nm text)]. Returns the graph, each
    module's external symbols, and each module's undefined symbols."""
    g = Graph("call")
    defs = {}
    is_data = set()
    undef = collections.defaultdict(set)
    for rel, text in objects:
        m = mod_of_source(rel)
        d, u = parse_nm(text)
        for s, data in d.items():
            if s in defs and defs[s] != m:
                warn("%s is defined in %s and in %s" % (s, defs[s], m))
                continue
            defs[s] = m
            if data:
                is_data.add(s)
        undef[m] |= u
    external = collections.defaultdict(set)
    for m, syms in undef.items():
        for s in syms:
            if s in defs:
                g.add(m, defs[s], s + (" (data)" if s in is_data else ""))
            else:
                external[m].add(s)
    return g, external, undef


# ----------------------------------------------------------------- cycles

def sccs(nodes, edges):
    """Strongly connected components (iterative Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def shortest_path(edges, comp, src, dst):
    prev = {src: None}
    q = collections.deque([src])
    while q:
        v = q.popleft()
        if v == dst:
            break
        for w in sorted(edges.get(v, {})):
            if w in comp and w not in prev:
                prev[w] = v
                q.append(w)
    path, v = [], dst
    while v is not None:
        path.append(v)
        v = prev[v]
    return path[::-1]


def tangles(graph):
    """The strongly connected sets of two modules or more."""
    nodes = set(graph.edges)
    for v in graph.edges.values():
        nodes |= set(v)
    return [c for c in sccs(nodes, graph.edges) if len(c) > 1]


def cycles(graph):
    """Elementary cycles that between them use every arrow of every tangle,
    shortest first, each starting at its least module."""
    found = []
    for comp in tangles(graph):
        cs = set(comp)
        covered = set()
        arrows = sorted((a, b) for a in comp for b in graph.edges.get(a, {}) if b in cs)
        for a, b in arrows:
            if (a, b) in covered:
                continue
            cyc = [a] + shortest_path(graph.edges, cs, b, a)[:-1]
            i = cyc.index(min(cyc))
            cyc = cyc[i:] + cyc[:i]
            for x, y in zip(cyc, cyc[1:] + cyc[:1]):
                covered.add((x, y))
            if cyc not in found:
                found.append(cyc)
    found.sort(key=lambda c: (len(c), c))
    return found


def format_cycle(graph, cyc):
    lines = ["%s cycle: %s" % (graph.kind, " -> ".join(cyc + cyc[:1]))]
    for a, b in zip(cyc, cyc[1:] + cyc[:1]):
        lines.append("    %s -> %s: %s" % (a, b, graph.ties(a, b)))
    return "\n".join(lines)


# ----------------------------------------------------------------- layers

def core_header_ok(name):
    return name in CORE_SYSTEM_HEADERS or name.startswith(CORE_SYSTEM_PREFIXES)


def runtime_symbol(s):
    return s.startswith(RUNTIME_PREFIXES)


def check_layers(inc, system, calls, external, undef, libsyms):
    """Every rule, each break one line."""
    bad = []

    def edges(g, rule):
        for a in sorted(g.edges):
            for b in sorted(g.edges[a]):
                why = rule(a, b)
                if why:
                    verb = "includes" if g.kind == "include" else "calls"
                    bad.append("layer: %s %s %s (%s): %s" % (a, verb, b, why, g.ties(a, b)))

    def rule(a, b):
        if under(a, CORE) and not under(b, CORE):
            return "daemon/core/ uses nothing outside daemon/core/"
        if root_of(a) == "db" and (is_daemon_outer(b) or under(b, "tui")):
            return "db/ uses neither daemon/ outside daemon/core/ nor tui/"
        if root_of(a) == "tui" and is_daemon_outer(b):
            return "tui/ uses daemon/core/, never the rest of daemon/"
        if a == ENGINE and b in ENGINE_MUST_NOT:
            return "the engine knows nothing of what it drives"
        return None

    edges(inc, rule)
    edges(calls, rule)

    for rel, line, name in system:
        if under(rel, CORE) and not core_header_ok(name):
            bad.append("layer: %s:%d includes <%s> (daemon/core/ uses libc, libm "
                       "and cJSON only)" % (rel, line, name))

    if libsyms is not None:
        for m in sorted(external):
            if not under(m, CORE):
                continue
            out = sorted(s for s in external[m]
                         if s not in libsyms and not runtime_symbol(s))
            if out:
                bad.append("layer: %s calls %s, found in none of libc, libm, cJSON "
                           "(daemon/core/ uses those only)" % (m, ", ".join(out)))

    for m in sorted(undef):
        if not under(m, CORE) or m in CLOCK_MODULES:
            continue
        hit = sorted(undef[m] & CLOCK_FUNCS)
        if hit:
            bad.append("layer: %s calls %s (only daemon/core/clock.c and rng.c read "
                       "clocks and entropy: STYLE.md 8)" % (m, ", ".join(hit)))
    return bad


# ------------------------------------------------------------------ input

def run(cmd):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True).stdout


def library_symbols():
    """Every symbol libc, libm and cJSON define, or None when they cannot be
    found (then that one rule is skipped, with a warning)."""
    paths = []
    for lib in ("libc.so.6", "libm.so.6", "libc_nonshared.a"):
        try:
            p = run(["gcc", "-print-file-name=" + lib]).strip()
        except (OSError, subprocess.CalledProcessError):
            p = ""
        if os.path.isabs(p) and os.path.exists(p):
            paths.append(p)
    cj = None
    try:
        libdir = run(["pkg-config", "--variable=libdir", "libcjson"]).strip()
        for n in sorted(os.listdir(libdir)):
            if n.startswith("libcjson.so"):
                cj = os.path.join(libdir, n)
                break
    except (OSError, subprocess.CalledProcessError):
        pass
    if len(paths) < 2 or cj is None:
        warn("libc/libm/cJSON not found: daemon/core/'s outside calls are not checked")
        return None
    paths.append(cj)
    syms = set()
    for p in paths:
        args = ["nm", "-P", "--defined-only"]
        if ".so" in p:
            args.append("-D")
        for ln in run(args + [p]).splitlines():
            f = ln.split()
            if f and not f[0].endswith(":"):
                syms.add(f[0].split("@")[0])
    return syms


def build_objects(src, build):
    """[(source rel path, object path)] for the four libraries."""
    src = os.path.realpath(src)
    build = os.path.realpath(build)
    objs = []
    cc = os.path.join(build, "compile_commands.json")
    if os.path.exists(cc):
        with open(cc) as f:
            entries = json.load(f)
        for e in entries:
            out = e["output"].replace(os.sep, "/")
            if not any(out.startswith(lib + ".p/") for lib in LIBS):
                continue
            file = os.path.realpath(os.path.join(e["directory"], e["file"]))
            if under(file, src):
                rel = os.path.relpath(file, src)
            elif under(file, build):
                rel = os.path.relpath(file, build)
            else:
                warn("%s is outside both roots" % file)
                continue
            objs.append((rel.replace(os.sep, "/"),
                         os.path.join(e["directory"], e["output"])))
    else:
        for lib in LIBS:
            d = os.path.join(build, lib + ".p")
            if not os.path.isdir(d):
                continue
            for n in sorted(os.listdir(d)):
                if n.endswith(".c.o"):
                    n = n[:-2].replace("meson-generated_.._", "")
                    objs.append((os.path.dirname(lib) + "/" + n, os.path.join(d, n + ".o")))
    libs_seen = {lib for lib in LIBS for rel, o in objs if "/%s.p/" % os.path.basename(lib) in o}
    missing = [o for _, o in objs if not os.path.exists(o)]
    if len(libs_seen) < len(LIBS) or missing:
        print("arch: no objects for %s in %s: build it first (ninja -C %s)"
              % (", ".join(sorted(set(LIBS) - libs_seen) or missing[:3]), build, build),
              file=sys.stderr)
        sys.exit(2)
    stale = [rel for rel, o in objs if os.path.exists(os.path.join(src, rel))
             and os.path.getmtime(os.path.join(src, rel)) > os.path.getmtime(o)]
    if stale:
        warn("%d objects are older than their sources (%s): run ninja first"
             % (len(stale), ", ".join(stale[:4])))
    return objs


def check(tree, objects, libsyms):
    """Print every cycle and layering break, then the summary; the exit code."""
    mod = tree.modules()

    def mod_of_source(rel):
        return mod.get(rel, rel[:-2])

    inc, system = include_graph(tree, mod)
    calls, external, undef = call_graph(objects, mod_of_source)
    found = []
    for g in (inc, calls):
        for t in tangles(g):
            print("%s tangle of %d modules: %s" % (g.kind, len(t), " ".join(t)))
        for c in cycles(g):
            print(format_cycle(g, c))
            found.append((g, c))
    bad = check_layers(inc, system, calls, external, undef, libsyms)
    for b in bad:
        print(b)
    nmod = len(set(mod.values()))
    summary = "arch: %d modules, %d include arrows, %d call arrows, %d cycles" % (
        nmod, inc.arrows(), calls.arrows(), len(found))
    if bad:
        summary += ", %d layering breaks" % len(bad)
    print(summary)
    return (1 if found or bad else 0), found, bad



# ------------------------------------------------------- one writer per state

# STYLE.md section 7: a state machine's field is assigned in its one setter
# (and where the object is built or read back from its row, which is not a
# transition). (what, files, assignment pattern, {file: allowed functions}).
WRITERS = [
    ("a route's forced level", ("daemon",),
     r"(->|\.)forced_(level|actor|reason|until_wall)\s*=(?!=)",
     {"daemon/control.c": {"control_level_set"},
      "daemon/engine.c": {"engine_route_rt_init", "engine_route_rt_free"}}),
    ("a call's ladder step", ("daemon",), r"\bc->step\s*=(?!=)",
     {"daemon/call.c": {"call_set_step"}}),
    ("a job's state", ("daemon",), r"\bjb->state\s*=(?!=)",
     {"daemon/jobs.c": {"job_set_state", "jobs_accept", "load_row"}}),
    ("a review item's state", ("daemon",), r"\bit->state\s*=(?!=)",
     {"daemon/review_q.c": {"review_change_apply", "review_item_from_row"}}),
    ("a breaker's state", ("daemon",), r"\bb->state\s*=(?!=)",
     {"daemon/core/breaker.c": {"breaker_set_state", "breaker_init"}}),
]
FUNC_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(")


def check_writers(texts):
    """texts: {rel path: source text}. Lines 'writer: …' for every
    assignment of a WRITERS field outside its allowed functions."""
    bad = []
    for what, roots, pattern, allowed in WRITERS:
        rx = re.compile(pattern)
        for rel in sorted(texts):
            if not rel.endswith(".c") or not any(under(rel, r) for r in roots):
                continue
            fn = None
            for no, line in enumerate(strip_comments(texts[rel]).split("\n"), 1):
                m = FUNC_RE.match(line)
                if m:
                    fn = m.group(1)
                if rx.search(line) and fn not in allowed.get(rel, ()):
                    bad.append("writer: %s:%d: %s assigned in %s(), not in its setter (%s)" % (
                        rel, no, what, fn or "file scope",
                        ", ".join("%s:%s" % (f, "/".join(sorted(fs)))
                                  for f, fs in sorted(allowed.items()))))
    return bad


def source_texts(src):
    texts = {}
    for root in ROOTS:
        for dirpath, _, names in os.walk(os.path.join(src, root)):
            for n in names:
                if n.endswith(".c"):
                    path = os.path.join(dirpath, n)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        texts[os.path.relpath(path, src)] = f.read()
    return texts


# -------------------------------------------------------------- self-test

def self_test(verbose=True):
    """Made-up trees with one known fault each: the check must catch it.
    Every run of the real check does this first, quietly."""
    tmp = tempfile.mkdtemp(prefix="arch-self-test.")
    failures = []

    def tree_of(files):
        root = os.path.join(tmp, "t%d" % len(os.listdir(tmp)))
        for rel, text in files.items():
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        return Tree.scan(root, None)

    def nm(defined=(), undefined=()):
        return "".join(["%s T 0 10\n" % s for s in defined] +
                       ["%s U\n" % s for s in undefined])

    def expect(name, files, objects, want, libsyms=None):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            rc, found, bad = check(tree_of(files), objects, libsyms)
        text = buf.getvalue()
        ok = (rc == 0) if want is None else (rc == 1 and all(w in text for w in want))
        if verbose or not ok:
            print("self-test %-28s %s" % (name, "ok" if ok else "FAILED"))
        if not ok:
            failures.append(name)
            print("    wanted %r, got rc %d:\n%s" % (want, rc, text))

    clean = {
        "daemon/core/util.c": '#include "util.h"\n#include <string.h>\n#include <cjson/cJSON.h>\n',
        "daemon/core/util.h": "#pragma once\n#include <stddef.h>\n",
        "daemon/engine.c": '#include "engine.h"\n#include "util.h"\n',
        "daemon/engine.h": "#pragma once\n",
        "daemon/call.c": '#include "call.h"\n#include "engine.h"\n',
        "daemon/call.h": '#pragma once\n#include "engine.h"\n',
        "db/store.c": '#include "store.h"\n',
        "db/store.h": "#pragma once\n/* #include \"call.h\" in a comment */\n",
        "db/store_int.h": '#pragma once\n#include "store.h"\n',
        "db/store_writer.c": '#include "store_int.h"\n',
        "db/store_reader.c": '#include "store_int.h"\n',
        "tui/cli.c": '#include "cli.h"\n#include "util.h"\n#include "store.h"\n',
        "tui/cli.h": "#pragma once\n",
    }
    clean_objs = [
        ("daemon/core/util.c", nm(["util_x"], ["memcpy", "cJSON_Parse"])),
        ("daemon/engine.c", nm(["engine_run"], ["util_x"])),
        ("daemon/call.c", nm(["call_start"], ["engine_run"])),
        ("db/store.c", nm(["store_open"], ["writer_start"])),
        ("db/store_writer.c", nm(["writer_start"], ["store_open", "reader_get"])),
        ("db/store_reader.c", nm(["reader_get"], ["writer_start"])),
        ("tui/cli.c", nm(["cli_main"], ["util_x", "store_open"])),
    ]
    libc = {"memcpy", "cJSON_Parse", "time"}
    expect("clean tree passes", clean, clean_objs, None, libc)

    expect("2-file include cycle", dict(clean, **{
        "daemon/engine.h": '#pragma once\n#include "call.h"\n',
    }), clean_objs, ["include cycle: daemon/call -> daemon/engine -> daemon/call",
                     "daemon/engine.h:2 includes daemon/call.h"], libc)

    expect("3-module call cycle", clean, clean_objs[:1] + [
        ("daemon/engine.c", nm(["engine_run"], ["call_start"])),
        ("daemon/call.c", nm(["call_start"], ["obs_note"])),
        ("daemon/obs.c", nm(["obs_note"], ["engine_run"])),
    ] + clean_objs[3:], ["call cycle: daemon/call -> daemon/obs -> daemon/engine -> daemon/call",
                         "daemon/obs -> daemon/engine: engine_run"], libc)

    expect("core includes curl", dict(clean, **{
        "daemon/core/util.c": '#include "util.h"\n#include <curl/curl.h>\n',
    }), clean_objs, ["daemon/core/util.c:2 includes <curl/curl.h>"], libc)

    expect("core includes store.h", dict(clean, **{
        "daemon/core/util.h": '#pragma once\n#include "store.h"\n',
    }), clean_objs, ["layer: daemon/core/util includes db/store"], libc)

    expect("core calls curl", clean, [
        ("daemon/core/util.c", nm(["util_x"], ["memcpy", "curl_easy_init"])),
    ] + clean_objs[1:], ["daemon/core/util calls curl_easy_init"], libc)

    expect("core reads the clock", clean, [
        ("daemon/core/util.c", nm(["util_x"], ["memcpy", "time"])),
    ] + clean_objs[1:], ["daemon/core/util calls time"], libc)

    expect("engine calls call", clean, clean_objs[:1] + [
        ("daemon/engine.c", nm(["engine_run"], ["call_start"])),
    ] + clean_objs[2:], ["layer: daemon/engine calls daemon/call"], libc)

    expect("tui includes engine.h", dict(clean, **{
        "tui/cli.h": '#pragma once\n#include "engine.h"\n',
    }), clean_objs, ["layer: tui/cli includes daemon/engine"], libc)

    expect("db includes tui", dict(clean, **{
        "db/store.h": '#pragma once\n#include "cli.h"\n',
    }), clean_objs, ["layer: db/store includes tui/cli"], libc)

    for name, texts, want in [
        ("forced level set elsewhere", {
            "daemon/control.c": "void\ncontrol_level_set(int x)\n{\n\trt->forced_level = x;\n}\n",
            "daemon/review_q.c": "static void\noverflow(void)\n{\n\trt->forced_level = 2;\n}\n",
        }, "writer: daemon/review_q.c:4: a route's forced level assigned in overflow()"),
        ("call step set elsewhere", {
            "daemon/call.c": "static void\ncall_fall(void)\n{\n\tc->step = STEP_RULES; /* c->step = x */\n}\n",
        }, "writer: daemon/call.c:4: a call's ladder step assigned in call_fall()"),
        ("setters and reads pass", {
            "daemon/control.c": "void\ncontrol_level_set(int x)\n{\n\trt->forced_level = x;\n\tif (rt->forced_level == 1) return;\n}\n",
            "daemon/call.c": "void\ncall_set_step(void)\n{\n\tc->step = to;\n}\n",
        }, None),
    ]:
        got = check_writers(texts)
        ok = (not got) if want is None else any(g.startswith(want) for g in got)
        if verbose or not ok:
            print("self-test %-28s %s" % (name, "ok" if ok else "FAILED"))
        if not ok:
            failures.append(name)
            print("    wanted %r, got %r" % (want, got))

    shutil.rmtree(tmp)
    if failures:
        print("arch: self-test FAILED: %s" % ", ".join(failures))
        return 1
    if verbose:
        print("arch: self-test passed")
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    src, build = argv[1], argv[2]
    for r in ROOTS:
        if not os.path.isdir(os.path.join(src, r)):
            print("arch: %s is not the source root (no %s/)" % (src, r), file=sys.stderr)
            return 2
    if self_test(verbose=False) != 0:
        return 2
    objects = []
    for rel, o in build_objects(src, build):
        objects.append((rel, run(["nm", "-P", o])))
    tree = Tree.scan(src, build)
    rc, _, _ = check(tree, objects, library_symbols())
    writers = check_writers(source_texts(src))
    for w in writers:
        print(w)
    print("arch: %d one-writer rules, %d writes outside their setters" % (len(WRITERS), len(writers)))
    return 1 if rc or writers else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
