#!/usr/bin/env python3
"""The Morpheus demo scenario, run by deploy/demo.sh against a
running local cluster (DIR/cluster.env). Everything goes through morpheusctl
(and the RM's web-UI JSON) as a job owner and an operator would use them:

1. every period a producer (demo-ingest), the periodic job (demo-sessions, in
   its owner's ad-hoc queue root.default on an idle cluster) and a consumer
   (demo-report) run as real DAG jobs (morpheus-dag-am); the RM forwards each
   finished run's skyline and file reads/writes to the inference service;
2. the inference service proposes an SLO and skyline for demo-sessions (Morpheus
   §4/§5) and the owner signs it off with `morpheusctl slo accept`;
3. the reservation is in the plan (`morpheusctl plan show`, the web page);
4. an ad-hoc flood (root.adhoc) of long tasks takes every container nobody
   is guaranteed and holds it (nothing frees during a run), and the next
   runs of demo-sessions run inside their reservation;
5. one run is slowed for real (its transform tasks sleep longer, a knob in its
   job spec); dynamic reprovisioning (Morpheus §7) grants it extra containers;
   then the owner sets the reservation's DRA budget to 0 (`morpheusctl
   reservation update`, YARN JSON "reprovision-budget") and the next run,
   slowed identically, runs without DRA on its guarantee alone and misses
   its deadline: the counterfactual;
6. a summary table of every run of demo-sessions, from the RM's records.

Writes what it saw as JSON under DIR/scenario/ (summary.json and the morpheusctl
outputs of each step) for the integration test (tests/integration/demo_test.cc).
Exit code 0 when every step happened, the slowed run met its deadline with
DRA grants and the identically slowed run, with DRA budget 0 and no grant,
missed it; 1 otherwise.
"""

import argparse
import math
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

# Seconds. period: how often the periodic job runs (a divisor of the plan's
# LCM and a multiple of the plan step, demo.sh); *_at: when each job is submitted after the period start;
# task_s / slow_task_s: the DEMO_TASK_SECONDS knob of demo-sessions (extract
# and load sleep that long, its transform tasks TRANSFORM_FACTOR times that);
# reserved: the runs inside the reservation, one per period: "slowed" (DRA
# on, the owner's budget) or "slowed-no-dra" (the same slowed job after the
# owner set the DRA budget to 0; the last one); learn_max: give up when no
# proposal comes within that many periods.
#
# Why these numbers (docs/getting-started.md explains the demo): the plan
# holds the job's skyline as fitted from its unslowed runs, at the start of
# its window. The slowed run's transform outlasts that allocation. With DRA
# it gets the extra containers and ends about 40 s into the period (about
# 30 s in ci); without DRA nothing frees for it once its allocation ends
# (the flood holds every other container), so it waits for the next
# instance's allocation, one period later. The deadline (report_at) sits
# between the two, about 30 s (20 s in ci) from each, where the run-to-run
# jitter of the slowed run measured a few seconds.
PROFILES = {
    "demo": dict(period=90, ingest_at=0, run_at=5, report_at=75, task_s=2, slow_task_s=4,
                 reserved=("slowed", "slowed-no-dra"), learn_max=6),
    "ci": dict(period=60, ingest_at=0, run_at=2, report_at=48, task_s=1, slow_task_s=2,
               reserved=("slowed", "slowed-no-dra"), learn_max=5),
}
# demo-sessions' transform tasks sleep this many times DEMO_TASK_SECONDS
# (examples/demo/sessions.yaml).
TRANSFORM_FACTOR = 4
NO_DRA = "slowed-no-dra"
JOB = "demo-sessions"
T0 = time.time()


class DemoError(Exception):
    pass


def say(msg):
    t = time.time() - T0
    print(f"[{int(t) // 60:02d}:{int(t) % 60:02d}] {msg}", flush=True)


def indent(text):
    return "".join("        " + line + "\n" for line in text.rstrip("\n").split("\n"))


class Cluster:
    """morpheusctl against the cluster of DIR/cluster.env, as its operator."""

    def __init__(self, var):
        env = {}
        with open(os.path.join(var, "cluster.env")) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                env[k] = v
        self.rm_http = env["RM_HTTP"]
        self.token_file = os.path.join(var, "operator.token")
        with open(self.token_file) as f:
            self.token = f.readline().strip()
        self.base = [os.path.join(env["BIN"], "morpheusctl"), "--rm", env["RM"], "--inference",
                     env["INFERENCE"], "--token-file", self.token_file]

    def run(self, *args):
        p = subprocess.run(self.base + list(args), capture_output=True, text=True, timeout=90)
        if p.returncode != 0:
            raise DemoError(f"morpheusctl {' '.join(args)} exited {p.returncode}: "
                            f"{(p.stderr or p.stdout).strip()}")
        return p.stdout

    def json(self, *args):
        return json.loads(self.run(*args, "--json"))

    def app(self, app_id):
        """The application's record of `morpheusctl app status --json`."""
        return self.json("app", "status", app_id)["applications"][0]

    def submit(self, job_file, *args):
        return self.run("app", "submit", job_file, *args).strip().split("\n")[0]

    def ui(self, path):
        req = urllib.request.Request(f"http://{self.rm_http}{path}",
                                     headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())


def write_jobs(src, dst, p):
    """The job files of this profile: DEMO_TASK_SECONDS set to task_s, and the
    slowed copy of demo-sessions whose transform stage has slow_task_s."""
    os.makedirs(dst, exist_ok=True)
    out = {}
    for name in ("ingest", "report", "flood"):
        with open(os.path.join(src, name + ".yaml")) as f:
            text = f.read()
        out[name] = os.path.join(dst, name + ".yaml")
        with open(out[name], "w") as f:
            f.write(text)
    with open(os.path.join(src, "sessions.yaml")) as f:
        text = f.read()
    knob = re.compile(r'DEMO_TASK_SECONDS: "\d+"')
    if len(knob.findall(text)) != 3:
        raise DemoError(f"{src}/sessions.yaml: expected DEMO_TASK_SECONDS in each of its 3 stages")
    normal = knob.sub(f'DEMO_TASK_SECONDS: "{p["task_s"]}"', text)
    head, sep, tail = normal.partition("  - name: transform")
    tail = knob.sub(f'DEMO_TASK_SECONDS: "{p["slow_task_s"]}"', tail, count=1)
    for name, body in (("sessions", normal), ("sessions-slowed", head + sep + tail)):
        out[name] = os.path.join(dst, name + ".yaml")
        with open(out[name], "w") as f:
            f.write(body)
    return out


def instance_deadline(detail, submit_ms):
    """The deadline of the instance of a reservation (the web page's detail
    JSON) that a run submitted at submit_ms is bound to: the first whose
    deadline is after the submission, as the RM binds a run by its recurrence
    key (ReservationManager::byRecurrenceKey, current or next window)."""
    d, period = detail["deadline_ms"], detail["period_ms"]
    if period > 0:  # also backwards: an update moves the definition's window on
        d += -(-(submit_ms - d + 1) // period) * period
    return d


def fmt_s(ms):
    return f"{ms / 1000:.1f} s"


class Scenario:
    def __init__(self, c, p, jobs, out_dir):
        self.c, self.p, self.jobs, self.out = c, p, jobs, out_dir
        self.runs = []  # {"app", "kind", "slowed", "period_start_ms", "dra_budget_container_ms"}
        self.finished = set()
        self.reason = None
        self.proposal = None
        self.reservation = None
        self.flood = None
        self.dra_seen = 0
        self.reserved_submitted = 0
        self.flood_samples = []
        self.planned_with_dra = None  # the reservation's plan before the budget went to 0
        os.makedirs(out_dir, exist_ok=True)

    def save(self, name, data):
        with open(os.path.join(self.out, name), "w") as f:
            json.dump(data, f, indent=2)

    # ---- what happens each period ----
    def submit_period(self, start):
        """Before the sign-off the producer, the job and the consumer; after it
        the job only: the SLO is learned, and ad-hoc jobs would wait behind
        the flood, then take the containers it gives up for the reservation."""
        p = self.p
        if self.reservation:
            return [(start + p["run_at"], "run")]
        events = [(start + p["ingest_at"], "ingest"), (start + p["run_at"], "run"),
                  (start + p["report_at"], "report")]
        return sorted(events)

    def do(self, kind, period_start):
        c, j = self.c, self.jobs
        if kind != "run" and self.reservation:
            return  # see submit_period
        if kind == "ingest":
            c.submit(j["ingest"], "--recurrence", "demo-ingest")
        elif kind == "report":
            c.submit(j["report"], "--recurrence", "demo-report")
        else:
            kind = "learn"
            if self.reservation:
                if not self.flood:
                    raise DemoError("the runs before the sign-off still run when the first "
                                    "reserved run is due (no flood yet)")
                kind = self.p["reserved"][self.reserved_submitted]
                self.reserved_submitted += 1
            if kind == NO_DRA:
                self.dra_off()
            slowed = kind in ("slowed", NO_DRA)
            job = j["sessions-slowed"] if slowed else j["sessions"]
            app = c.submit(job, "--recurrence", JOB)
            st = c.app(app)
            budget = None
            where = f"in the owner's queue {st['queue']}"
            if st["reservation_id"]:
                budget = c.ui(f"/ui/api/reservation?id={st['reservation_id']}")["budget_container_ms"]
                where = (f"inside reservation {st['reservation_id']} (DRA budget "
                         f"{budget / 1000:.0f} container-s)")
            extra = ""
            if slowed:
                extra = (f" -- SLOWED: transform's DEMO_TASK_SECONDS {self.p['task_s']} -> "
                         f"{self.p['slow_task_s']} (its 6 tasks sleep "
                         f"{TRANSFORM_FACTOR * self.p['slow_task_s']} s instead of "
                         f"{TRANSFORM_FACTOR * self.p['task_s']} s)")
            if kind == NO_DRA:
                extra += ", the same slowed job without DRA"
            say(f"{JOB} run {len(self.runs) + 1}: {app} submitted {where}{extra}")
            self.runs.append({"app": app, "kind": kind, "slowed": slowed,
                              "period_start_ms": period_start * 1000,
                              "dra_budget_container_ms": budget})

    def dra_off(self):
        """The owner turns DRA off for the reservation from its current
        instance on: `morpheusctl reservation update` with the definition the
        RM's REST API reports (YARN JSON, what -f reads), its window moved to
        the current instance (an update must end in the future) and
        "reprovision-budget": 0. The plan is the same
        (a periodic placement is relative to its period), only DRA's budget
        changes."""
        unfinished = [r["app"] for r in self.runs if r["app"] not in self.finished]
        if unfinished:
            raise DemoError(f"runs {unfinished} still running when the run without DRA is due")
        before = self.c.ui(f"/ui/api/reservation?id={self.reservation}")
        self.planned_with_dra = before["planned"]
        self.save("reservation-detail-dra-on.json", before)
        res = self.c.ui(f"/ws/v1/cluster/reservation/list?reservation-id={self.reservation}")
        res = res["reservations"][0]
        d = res["reservation-definition"]
        period = int(d["recurrence-expression"])
        now_ms = int(time.time() * 1000)
        k = max(0, math.ceil((now_ms + 1000 - d["deadline"]) / period))
        d["arrival"] += k * period
        d["deadline"] += k * period
        d["reprovision-budget"] = 0
        doc = {"reservation-id": self.reservation, "user": res["user"], "queue": res["queue"],
               "reservation-definition": d}
        path = os.path.join(self.out, "dra-off-update.json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)
        say(f"the owner turns DRA off for the next run: reprovision-budget 0 in {path}, "
            f"morpheusctl reservation update -f {os.path.basename(path)}")
        self.c.run("reservation", "update", "-f", path)
        after = self.c.ui(f"/ui/api/reservation?id={self.reservation}")
        self.save("reservation-detail-dra-off.json", after)
        if after["budget_container_ms"] != 0 or after["planned"] != before["planned"]:
            raise DemoError(f"reservation update: budget {after['budget_container_ms']} "
                            f"(want 0) or the plan changed: {before['planned']} -> "
                            f"{after['planned']}")

    # ---- what the system does meanwhile ----
    def poll_runs(self):
        for r in self.runs:
            if r["app"] in self.finished:
                continue
            st = self.c.app(r["app"])
            if st["state"] in ("FINISHED", "FAILED", "KILLED"):
                self.finished.add(r["app"])
                verdict = ""
                if st["reservation_id"] and self.flood:
                    self.sample_flood()
                if st["reservation_id"]:
                    detail = self.c.ui(f"/ui/api/reservation?id={st['reservation_id']}")
                    d = instance_deadline(detail, st["submit_ms"])
                    verdict = (f"; its instance's deadline {fmt_s(abs(d - st['finish_ms']))} "
                               + ("later: met" if st["finish_ms"] <= d else "earlier: MISSED"))
                say(f"{JOB} {r['app']} {st['state']} after {fmt_s(st['finish_ms'] - st['submit_ms'])}"
                    f" (submitted to finished){verdict}")

    def poll_proposal(self, now, period_start):
        listing = self.c.json("slo", "list")
        for n in listing["not_actionable"]:
            if n["job_key"] == JOB and n["reason"] != self.reason:
                self.reason = n["reason"]
                say(f"inference: no SLO for {JOB} yet: {self.reason}")
        pending = [x for x in listing["proposals"]
                   if x["job_key"] == JOB and x["state"].lower() == "pending"]
        if not pending:
            return
        # Sign off outside [period start, this period's run submitted + 1 s]:
        # a run is bound to its reservation when it is submitted.
        if period_start <= now < period_start + self.p["run_at"] + 1:
            return
        prop = pending[-1]
        self.proposal = prop
        self.save("proposal.json", prop)
        say(f"inference proposes an SLO for {JOB} (proposal {prop['proposal_id']}, "
            f"from {prop['runs_used']} runs):")
        print(indent(self.c.run("slo", "show", prop["proposal_id"])), end="", flush=True)
        say(f"the owner signs it off: morpheusctl slo accept {prop['proposal_id']}")
        acc = self.c.json("slo", "accept", prop["proposal_id"])["proposals"][0]
        self.save("accept.json", acc)
        self.reservation = acc["reservation_id"]
        if not self.reservation:
            raise DemoError(f"slo accept returned no reservation: {acc}")
        say(f"reservation {self.reservation} admitted: {acc.get('placement', '')}")
        res = self.c.json("reservation", "show", self.reservation)
        self.save("reservation-accepted.json", res)
        plan = self.c.json("plan", "show", "--from", "now", "--to", f"+{2 * self.p['period']}s")
        self.save("plan.json", plan)
        self.save("ui-plan.json", self.c.ui("/ui/api/plan"))  # what the web page charts
        say("the plan (morpheusctl plan show; the web page charts it: "
            f"http://{self.c.rm_http}/ui/#token={self.c.token}&reservation={self.reservation}):")
        print(indent(self.c.run("plan", "show", "--from", "now", "--to",
                                f"+{2 * self.p['period']}s", "--width", "60")), end="", flush=True)

    def start_flood(self):
        """Once the reservation exists and every run of the job before it has
        finished: the flood's tasks outlast the demo and the ad-hoc queues do
        not preempt each other, so an unbound run still going would wait
        behind it for good."""
        self.flood = self.c.submit(self.jobs["flood"], "--queue", "root.adhoc")
        with open(self.jobs["flood"]) as f:
            spec = f.read()
        what = " ".join(re.findall(r"(tasks: \d+|sleep \d+)", spec))
        say(f"ad-hoc flood {self.flood} submitted to root.adhoc ({what}): it takes every "
            "container nobody is guaranteed and holds it until the demo kills it")

    def poll_dra(self):
        res = self.c.json("reservation", "show", self.reservation)
        hist = res["reservations"][0]["reprovision_history"]
        for h in hist[self.dra_seen:]:
            verdict = "granted" if h.get("granted") else "denied"
            say(f"DRA {verdict}: {h.get('reason', h)}")
        self.dra_seen = len(hist)

    def sample_flood(self):
        """The cluster's usage and the flood's containers as a reserved run starts."""
        cluster = self.c.json("cluster", "status")
        flood = self.c.app(self.flood)
        self.flood_samples.append({"cluster": cluster, "flood": flood})
        self.save("flood.json", self.flood_samples)
        say(f"cluster: {cluster['used']['vcores']}/{cluster['capacity']['vcores']} vcores in use, "
            f"{flood['running_containers']} of them by the flood")

    # ---- the run ----
    def run(self):
        p = self.p
        period = p["period"]
        start = (int(time.time()) // period + 1) * period
        if start - time.time() < 2:
            start += period
        say(f"{JOB} runs every {period} s; the first period starts in {start - time.time():.0f} s. "
            f"Each period: demo-ingest at +{p['ingest_at']} s, {JOB} at +{p['run_at']} s, "
            f"demo-report (reads its output) at +{p['report_at']} s")
        learned_periods = 0
        while True:
            if not self.reservation:
                learned_periods += 1
                if learned_periods > p["learn_max"]:
                    raise DemoError(f"no SLO proposal for {JOB} after {p['learn_max']} periods "
                                    f"(last reason: {self.reason})")
            if self.reserved_submitted >= len(p["reserved"]):
                break
            for at, kind in self.submit_period(start):
                while time.time() < at:
                    self.tick(start)
                    time.sleep(min(0.5, max(0.0, at - time.time())))
                self.do(kind, start)
                if kind == "run" and self.flood:
                    self.sample_flood()
                if kind == "run" and self.reserved_submitted >= len(p["reserved"]):
                    break  # the last run is out: wait for it below
            start += period
        # Wait for the last runs to end. The run without DRA is killed if it
        # has not finished three quarters of a period after the report's time
        # (the deadline the inference service learned): it has missed it by
        # then. It normally finishes before, on the next instance's allocation.
        deadline = time.time() + p["report_at"] - p["run_at"] + 3 * period / 4
        while len(self.finished) < len(self.runs) and time.time() < deadline:
            self.tick(start)
            time.sleep(0.5)
        for r in self.runs:
            if r["kind"] == NO_DRA and r["app"] not in self.finished:
                try:
                    self.c.run("app", "kill", r["app"], "--reason",
                               "demo: 3/4 of a period past its deadline")
                except DemoError as e:
                    # It ended between the last poll and the kill: late either way.
                    if "already" not in str(e):
                        raise
                    say(f"{JOB} {r['app']} (without DRA) ended on its own as the demo was "
                        "about to kill it")
                    continue
                say(f"{JOB} {r['app']} (without DRA) still running 3/4 of a period past its "
                    "deadline: killed")
        wait_kill = time.time() + 30
        while len(self.finished) < len(self.runs) and time.time() < wait_kill:
            self.tick(start)
            time.sleep(0.5)
        self.tick(start)
        if len(self.finished) < len(self.runs):
            raise DemoError("runs still not finished 3/4 of a period after the last deadline")

    def tick(self, period_start):
        self.poll_runs()
        if not self.reservation:
            self.poll_proposal(time.time(), period_start)
        else:
            if not self.flood and len(self.finished) == len(self.runs):
                self.start_flood()
            self.poll_dra()

    # ---- the summary, from the RM's records ----
    def summary(self):
        c = self.c
        detail = c.ui(f"/ui/api/reservation?id={self.reservation}")
        res = c.json("reservation", "show", self.reservation)
        telemetry = {t["application_id"]: t
                     for t in c.json("app", "telemetry", "--key", JOB)["applications"]}
        self.save("reservation.json", res)
        self.save("reservation-detail.json", detail)
        self.save("telemetry.json", list(telemetry.values()))
        unit = self.proposal["container"]["memory_mib"]  # the skyline's container (memory-bound)
        # The reservation's planned container-seconds per instance.
        planned_ms = sum((a["end_offset_ms"] - a["offset_ms"]) * a["resource"]["memory_mib"] / unit
                         for a in detail["planned"])
        rows = []
        for r in self.runs:
            st = c.app(r["app"])
            t = telemetry.get(r["app"])
            used_ms = sum(t["skyline"]) * t["step_ms"] if t else None
            row = {"run": len(rows) + 1, "app": r["app"], "kind": r["kind"], "slowed": r["slowed"],
                   "dra_budget_container_ms": r["dra_budget_container_ms"], "state": st["state"],
                   "queue": st["queue"], "reservation_id": st["reservation_id"],
                   "submit_ms": st["submit_ms"], "start_ms": st["start_ms"],
                   "finish_ms": st["finish_ms"], "runtime_ms": st["finish_ms"] - st["submit_ms"],
                   "used_container_ms": used_ms}
            if st["reservation_id"]:
                d = instance_deadline(detail, st["submit_ms"])
                row["deadline_ms"] = d
                row["met_deadline"] = st["state"] == "FINISHED" and st["finish_ms"] <= d
                row["reserved_container_ms"] = planned_ms
                grants = [h for h in detail["dra_history"]
                          if h["granted"] and st["start_ms"] <= h["time_ms"] <= st["finish_ms"]]
                row["dra_grants"] = len(grants)
                row["dra_denials"] = [h["reason"] for h in detail["dra_history"]
                                      if not h["granted"]
                                      and st["start_ms"] <= h["time_ms"] <= st["finish_ms"]]
                row["dra_max_extra_containers"] = max(
                    [round(h["extra"]["memory_mib"] / unit) for h in grants], default=0)
            rows.append(row)
        return rows


def print_summary(rows):
    print()
    print(f"{'RUN':<4}{'APPLICATION':<49}{'WHERE':<16}{'RUNTIME':>9}  {'DEADLINE':<9}"
          f"{'RESERVED c*s':>13}{'USED c*s':>10}{'DRA BUDGET c*s':>16}{'DRA GRANTS':>12}")
    for r in rows:
        where = "reservation" if r["reservation_id"] else r["queue"]
        dl = "-"
        if "met_deadline" in r:
            dl = "met" if r["met_deadline"] else "MISSED"
        reserved = f"{r['reserved_container_ms'] / 1000:.0f}" if "reserved_container_ms" in r else "-"
        used = f"{r['used_container_ms'] / 1000:.0f}" if r["used_container_ms"] is not None else "?"
        grants = "-"
        if "dra_grants" in r:
            grants = str(r["dra_grants"])
            if r["dra_grants"]:
                grants += f" (<=+{r['dra_max_extra_containers']})"
        budget = "-"
        if r["dra_budget_container_ms"] is not None:
            budget = f"{r['dra_budget_container_ms'] / 1000:.0f}"
        name = r["app"] + {"slowed": " (slowed)", NO_DRA: " (slowed, no DRA)"}.get(r["kind"], "")
        if r["state"] != "FINISHED":
            dl += f" ({r['state'].lower()})"
        print(f"{r['run']:<4}{name:<49}{where:<16}{r['runtime_ms'] / 1000:>8.1f}s  {dl:<9}"
              f"{reserved:>13}{used:>10}{budget:>16}{grants:>12}")
    print("runtime: submitted to finished; deadline: the end of the reservation instance the run "
          "was bound to; c*s: container-seconds (reserved: the plan's allocation per instance; "
          "used: the run's telemetry skyline; DRA budget: the owner's, as the run was submitted; "
          "no DRA: the same slowed job after `reservation update` set the budget to 0)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--var", required=True)
    ap.add_argument("--profile", choices=sorted(PROFILES), default="demo")
    ap.add_argument("--jobs", required=True, help="examples/demo")
    a = ap.parse_args()
    p = PROFILES[a.profile]
    out = os.path.join(a.var, "scenario")
    c = Cluster(a.var)
    s = Scenario(c, p, write_jobs(a.jobs, os.path.join(out, "jobs"), p), out)
    try:
        s.run()
        if s.flood:
            c.run("app", "kill", s.flood, "--reason", "demo finished")
            say(f"flood {s.flood} killed")
        rows = s.summary()
    except (DemoError, OSError, subprocess.SubprocessError, ValueError, KeyError) as e:
        say(f"demo failed: {e}")
        return 1
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    s.save("summary.json", {"proposal": s.proposal, "reservation_id": s.reservation,
                            "flood": s.flood, "runs": rows})
    print_summary(rows)
    slowed = [r for r in rows if r["kind"] == "slowed"]
    ok = bool(slowed) and slowed[0].get("met_deadline") and slowed[0].get("dra_grants", 0) > 0
    say("done: the slowed run met its deadline with DRA grants" if ok
        else "done, but the slowed run did not meet its deadline with DRA grants")
    # The counterfactual: the flood's tasks outlast every run, so no container
    # frees for a reserved run beyond its guarantee to borrow (it would: it
    # shares with the ad-hoc queues, rm/runtime/runtime.cc); without DRA's grants,
    # which preempt the flood, the same slowed run has its guarantee only.
    no_dra = [r for r in rows if r["kind"] == NO_DRA]
    off = bool(no_dra) and no_dra[0].get("dra_budget_container_ms") == 0 \
        and no_dra[0].get("dra_grants") == 0 and no_dra[0].get("met_deadline") is False
    if not no_dra or no_dra[0].get("dra_grants") is None:
        say("      the run without DRA is missing or was not bound to the reservation")
    else:
        r = no_dra[0]
        say(f"      the same slowed run without DRA (budget {r['dra_budget_container_ms']}, "
            f"{r['dra_grants']} grants) " + ("MISSED its deadline: DRA made the difference"
                                             if not r["met_deadline"] else
                                             "met its deadline too: DRA was not decisive this time"))
    return 0 if ok and off else 1


if __name__ == "__main__":
    sys.exit(main())
