#include "cli/cmd_reservation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/config.h"
#include "common/wire.h"
#include "morpheus/v1/reservation.grpc.pb.h"
#include "rm/http/yarn_json.h"

namespace morpheus::cli {

using nlohmann::json;

namespace {

void check(const grpc::Status& st, const CliContext& ctx) {
  checkCall(st, "RM at " + rmChannel(ctx).current());
}

// check() for the submit or update of a file: the RM names wire-API fields
// ("definition.stages[0].num_containers"), the user wrote YARN JSON, so a
// refusal names the field as the file spells it, as the REST edge does.
void checkFile(const grpc::Status& st, const CliContext& ctx) {
  if (Status s = fromGrpc(st); s.code() == StatusCode::kInvalidArgument) {
    failRemote(rm::withYarnFieldPath(s), "RM at " + rmChannel(ctx).current());
  }
  check(st, ctx);
}

// The file of -f/--file (named as typed in errors).
std::string readFile(const CliContext& ctx, const std::string& path) {
  requireReadable(path, "reservation file", typedName(ctx, {"-f", "--file"}));
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A time argument (format.h's parseTime); a bad one fails naming `field`.
int64_t parseTimeArg(const CliContext& ctx, const std::string& s, const std::string& field) {
  auto t = parseTime(s, field, nowMs(ctx));
  if (!t.isOk()) failWith(t.status());
  return *t;
}

json resourceJson(const v1::Resource& r) {
  return {{"memory_mib", r.memory_mib()}, {"vcores", r.vcores()}};
}

json allocationsJson(const google::protobuf::RepeatedPtrField<v1::ResourceAllocation>& allocs) {
  json out = json::array();
  for (const auto& a : allocs) {
    json j = {{"resource", resourceJson(a.resource())}};
    setTime(j, "start", a.start_ms());
    setTime(j, "end", a.end_ms());
    out.push_back(std::move(j));
  }
  return out;
}

const char* interpreterName(v1::Interpreter i) {
  switch (i) {
    case v1::R_ANY:
      return "R_ANY";
    case v1::R_ORDER:
      return "R_ORDER";
    case v1::R_ORDER_NO_GAP:
      return "R_ORDER_NO_GAP";
    default:
      return "R_ALL";
  }
}

// One reservation in morpheusctl's JSON (format.h's contract; the YARN REST
// document stays the RM's REST API and the input of -f).
json reservationJson(const v1::ReservationReport& r) {
  const auto& d = r.definition();
  json stages = json::array();
  for (const auto& s : d.stages()) {
    stages.push_back({{"capability", resourceJson(s.capability())},
                      {"num_containers", s.num_containers()},
                      {"min_concurrency", s.min_concurrency() == 0 ? 1 : s.min_concurrency()},
                      {"duration_ms", s.duration_ms()}});
  }
  json def = {{"name", d.name()},
              {"period_ms", d.period_ms()},
              {"recurrence_key", d.recurrence_key()},
              {"interpreter", interpreterName(d.interpreter())},
              {"priority", d.priority()},
              {"problematic", d.problematic()},
              {"reprovision_budget_container_ms", d.reprovision_budget_container_ms()},
              {"stages", stages}};
  setTime(def, "arrival", d.arrival_ms());
  setTime(def, "deadline", d.deadline_ms());
  json history = json::array();
  for (const auto& e : r.reprovision_history()) {
    json h = {{"policy", e.policy()},
              {"granted", e.granted()},
              {"extra", resourceJson(e.extra())},
              {"duration_ms", e.duration_ms()},
              {"reason", e.reason()}};
    setTime(h, "time", e.time_ms());
    history.push_back(std::move(h));
  }
  json j = {{"reservation_id", r.reservation_id()},
            {"user", r.user()},
            {"queue", r.queue()},
            {"status", r.status()},
            {"status_reason", r.status_reason()},
            {"definition", def},
            {"allocations", allocationsJson(r.allocations())},
            {"reprovision_budget_used_container_ms", r.reprovision_budget_used_container_ms()},
            {"reprovision_history", history}};
  setTime(j, "acceptance", r.acceptance_ms());
  return j;
}

std::string periodText(int64_t ms) { return ms == 0 ? "one-off" : "every " + humanDuration(ms); }

// The allocations as an indented table.
void printAllocations(const google::protobuf::RepeatedPtrField<v1::ResourceAllocation>& allocs) {
  if (allocs.empty()) {
    std::printf("  (no allocations)\n");
    return;
  }
  Table t({"START", "END", "ALLOCATED"});
  for (const auto& a : allocs) {
    t.add({formatTime(a.start_ms()), formatTime(a.end_ms()),
           formatResource(a.resource().memory_mib(), a.resource().vcores())});
  }
  std::istringstream in(t.render());
  for (std::string l; std::getline(in, l);) std::printf("  %s\n", l.c_str());
}

// What submit, update and create print: the reservation and its allocations.
void printPlaced(const CliContext& ctx, const std::string& id, const char* verb,
                 const google::protobuf::RepeatedPtrField<v1::ResourceAllocation>& allocs) {
  if (ctx.json) {
    printJson("reservations",
              json{{"reservation_id", id}, {"allocations", allocationsJson(allocs)}});
    return;
  }
  std::printf("reservation %s %s\n", id.c_str(), verb);
  printAllocations(allocs);
}

std::string newId(const CliContext& ctx) {
  v1::NewReservationResponse resp;
  check(callRm(ctx, &v1::ReservationService::Stub::NewReservation, v1::NewReservationRequest(),
               &resp, Millis(10000), CallKind::kIdempotent),
        ctx);
  return resp.reservation_id();
}

void submitRequest(const CliContext& ctx, v1::SubmitReservationRequest* req, bool from_file) {
  if (req->reservation_id().empty()) req->set_reservation_id(newId(ctx));
  if (req->user().empty()) req->set_user(ctx.user);  // "" = the token's user
  if (req->queue().empty()) req->set_queue("default");
  v1::SubmitReservationResponse resp;
  grpc::Status st = callRm(ctx, &v1::ReservationService::Stub::SubmitReservation, *req, &resp,
                           Millis(30000), CallKind::kNotIdempotent);
  if (from_file) {
    checkFile(st, ctx);
  } else {
    check(st, ctx);
  }
  printPlaced(ctx, resp.reservation_id(), "accepted", resp.allocations());
}

void submit(const CliContext& ctx, const std::string& file) {
  auto req = rm::parseYarnSubmit(readFile(ctx, file));
  if (!req.isOk()) failWith(req.status().withContext(file));
  submitRequest(ctx, &*req, true);
}

// `reservation create`: one stage from flags, times and sizes as typed.
struct CreateArgs {
  std::string id, queue = "default", name, start = "now", deadline, memory, duration, every,
                  recurrence_key, budget;
  int containers = 0, vcores = 1, gang = 1;
};

void create(const CliContext& ctx, const CreateArgs& a) {
  const int64_t now = nowMs(ctx);
  auto fail = [](const Status& st) { failWith(st); };
  v1::SubmitReservationRequest req;
  req.set_reservation_id(a.id);
  req.set_queue(a.queue);
  auto* d = req.mutable_definition();
  d->set_name(a.name);
  d->set_recurrence_key(a.recurrence_key);
  auto start = parseTime(a.start, "--start", now);
  if (!start.isOk()) fail(start.status());
  auto deadline = parseTime(a.deadline, "--deadline", now);
  if (!deadline.isOk()) fail(deadline.status());
  if (*deadline <= *start) {
    fail(invalidArgument("--deadline",
                         formatTime(*deadline) + " is not after --start " + formatTime(*start)));
  }
  d->set_arrival_ms(*start);
  d->set_deadline_ms(*deadline);
  if (!a.every.empty()) {
    auto p = parseDurationArg(a.every, "--every");
    if (!p.isOk()) fail(p.status());
    d->set_period_ms(p->count());
  }
  if (!a.budget.empty()) {
    auto b = parseDurationArg(a.budget, "--reprovision-budget", /*allow_zero=*/true);
    if (!b.isOk()) fail(b.status());
    d->set_reprovision_budget_container_ms(b->count());
  }
  auto* stage = d->add_stages();
  if (a.containers < 1) fail(invalidArgument("--containers", "must be at least 1"));
  stage->set_num_containers(a.containers);
  auto mem = parseSizeMib(a.memory, "--memory");
  if (!mem.isOk()) fail(mem.status());
  stage->mutable_capability()->set_memory_mib(*mem);
  if (a.vcores < 1) fail(invalidArgument("--vcores", "must be at least 1"));
  stage->mutable_capability()->set_vcores(a.vcores);
  auto dur = parseDurationArg(a.duration, "--duration");
  if (!dur.isOk()) fail(dur.status());
  stage->set_duration_ms(dur->count());
  if (a.gang < 1 || a.gang > a.containers) {
    fail(invalidArgument(
        "--gang", "must be between 1 and --containers (" + std::to_string(a.containers) + ")"));
  }
  stage->set_min_concurrency(a.gang);
  submitRequest(ctx, &req, false);
}

void update(const CliContext& ctx, const std::string& file, const std::string& id_arg) {
  auto parsed = rm::parseYarnSubmit(readFile(ctx, file));
  if (!parsed.isOk()) failWith(parsed.status().withContext(file));
  v1::UpdateReservationRequest req;
  req.set_reservation_id(id_arg.empty() ? parsed->reservation_id() : id_arg);
  if (req.reservation_id().empty()) {
    failWith(invalidArgument("id", "name the reservation (argument or the file's reservation-id)"));
  }
  req.set_user(parsed->user().empty() ? ctx.user : parsed->user());
  *req.mutable_definition() = parsed->definition();
  v1::UpdateReservationResponse resp;
  checkFile(callRm(ctx, &v1::ReservationService::Stub::UpdateReservation, req, &resp, Millis(30000),
                   CallKind::kNotIdempotent),
            ctx);
  printPlaced(ctx, req.reservation_id(), "updated", resp.allocations());
}

void list(const CliContext& ctx, const std::string& id, const std::string& queue, bool show) {
  v1::ListReservationsRequest req;
  req.set_reservation_id(id);
  req.set_queue(queue);
  req.set_include_allocations(true);
  v1::ListReservationsResponse resp;
  check(callRm(ctx, &v1::ReservationService::Stub::ListReservations, req, &resp, Millis(10000),
               CallKind::kIdempotent),
        ctx);
  if (show && resp.reservations_size() == 0) {
    failRemote(notFound("reservation " + id + " does not exist"),
               "RM at " + rmChannel(ctx).current());
  }
  if (ctx.json) {
    json arr = json::array();
    for (const auto& r : resp.reservations()) arr.push_back(reservationJson(r));
    printJson("reservations", arr);
    return;
  }
  if (!show) {
    Table t({"RESERVATION", "USER", "QUEUE", "PERIOD", "ARRIVAL", "DEADLINE", "STATUS"});
    for (const auto& r : resp.reservations()) {
      const auto& d = r.definition();
      t.add({r.reservation_id(), r.user(), r.queue(), periodText(d.period_ms()),
             formatTime(d.arrival_ms()), formatTime(d.deadline_ms()), r.status()});
    }
    t.print();
    return;
  }
  const auto& r = resp.reservations(0);
  const auto& d = r.definition();
  std::printf("reservation %s (%s)\n  user %s, queue %s, accepted %s, status %s%s%s\n",
              r.reservation_id().c_str(), d.name().c_str(), r.user().c_str(), r.queue().c_str(),
              formatTime(r.acceptance_ms()).c_str(), r.status().c_str(),
              r.status_reason().empty() ? "" : ": ", r.status_reason().c_str());
  std::printf("  window %s .. %s, %s, %d stage(s)%s%s\n", formatTime(d.arrival_ms()).c_str(),
              formatTime(d.deadline_ms()).c_str(), periodText(d.period_ms()).c_str(),
              d.stages_size(), d.recurrence_key().empty() ? "" : ", recurrence key ",
              d.recurrence_key().c_str());
  for (int i = 0; i < d.stages_size(); i++) {
    const auto& s = d.stages(i);
    std::printf(
        "  stage %d: %d container(s) of %s for %s each, in gangs of %d\n", i, s.num_containers(),
        formatResource(s.capability().memory_mib(), s.capability().vcores()).c_str(),
        humanDuration(s.duration_ms()).c_str(), s.min_concurrency() == 0 ? 1 : s.min_concurrency());
  }
  std::printf("  allocations (current instance):\n");
  printAllocations(r.allocations());
  std::printf("  reprovisioning budget: %s of container time, %s used\n",
              humanDuration(d.reprovision_budget_container_ms()).c_str(),
              humanDuration(r.reprovision_budget_used_container_ms()).c_str());
  if (r.reprovision_history_size() > 0) {
    std::printf("  reprovisioning history:\n");
    Table t({"TIME", "POLICY", "DECISION", "EXTRA", "FOR", "REASON"});
    for (const auto& e : r.reprovision_history()) {
      t.add({formatTime(e.time_ms()), e.policy().empty() ? "-" : e.policy(),
             e.granted() ? "granted" : "denied",
             "+" + formatResource(e.extra().memory_mib(), e.extra().vcores()),
             humanDuration(e.duration_ms()), e.reason().empty() ? "-" : e.reason()});
    }
    std::istringstream in(t.render());
    for (std::string l; std::getline(in, l);) std::printf("    %s\n", l.c_str());
  }
}

void remove(const CliContext& ctx, const std::string& id) {
  v1::DeleteReservationRequest req;
  req.set_reservation_id(id);
  req.set_user(ctx.user);
  v1::DeleteReservationResponse resp;
  check(callRm(ctx, &v1::ReservationService::Stub::DeleteReservation, req, &resp, Millis(10000),
               CallKind::kNotIdempotent),
        ctx);
  if (ctx.json) {
    printJson("reservations", json{{"reservation_id", id}, {"deleted", true}});
  } else {
    std::printf("reservation %s deleted\n", id.c_str());
  }
}

// A terminal chart of plan load per resource: one row per height band, one
// column per time bucket (max over the bucket's steps), '-' marks capacity.
void planShow(const CliContext& ctx, const std::string& from, const std::string& to, int width) {
  v1::GetPlanRequest req;
  req.set_start_ms(parseTimeArg(ctx, from, "--from"));
  req.set_end_ms(to.empty() ? req.start_ms() + 86400000 : parseTimeArg(ctx, to, "--to"));
  if (req.end_ms() <= req.start_ms()) failWith(invalidArgument("--to", "must be after --from"));
  v1::GetPlanResponse resp;
  check(callRm(ctx, &v1::ReservationService::Stub::GetPlan, req, &resp, Millis(30000),
               CallKind::kIdempotent),
        ctx);
  if (ctx.json) {
    json steps = json::array();
    for (const auto& s : resp.steps()) {
      json j = {{"periodic", resourceJson(s.periodic())}, {"one_off", resourceJson(s.one_off())}};
      setTime(j, "start", s.start_ms());
      steps.push_back(std::move(j));
    }
    json extra = {{"step_ms", resp.step_ms()},
                  {"capacity", resourceJson(resp.capacity())},
                  {"reservation_count", resp.reservations()}};
    setTime(extra, "from", req.start_ms());
    setTime(extra, "to", req.end_ms());
    printJson("steps", steps, extra);
    return;
  }
  std::printf("plan %s .. %s, step %s, %d reservation(s)\n", formatTime(req.start_ms()).c_str(),
              formatTime(req.end_ms()).c_str(), humanDuration(resp.step_ms()).c_str(),
              resp.reservations());
  const int rows = 10;
  int n = resp.steps_size();
  int cols = std::max(1, std::min(width, n));
  for (int dim = 0; dim < 2; dim++) {
    double cap = dim == 0 ? resp.capacity().memory_mib() : resp.capacity().vcores();
    std::vector<double> periodic(cols, 0), total(cols, 0);
    for (int i = 0; i < n; i++) {
      int col = static_cast<int>(static_cast<int64_t>(i) * cols / std::max(n, 1));
      const auto& s = resp.steps(i);
      double p = dim == 0 ? s.periodic().memory_mib() : s.periodic().vcores();
      double o = dim == 0 ? s.one_off().memory_mib() : s.one_off().vcores();
      periodic[col] = std::max(periodic[col], p);
      total[col] = std::max(total[col], p + o);
    }
    double top = cap;
    for (double t : total) top = std::max(top, t);
    if (top <= 0) top = 1;
    std::printf("\n%s (capacity %s)   # periodic  + one-off  - capacity\n",
                dim == 0 ? "memory, MiB" : "vcores",
                dim == 0 ? formatMemory(static_cast<int64_t>(cap)).c_str()
                         : (std::to_string(static_cast<int64_t>(cap)) + " vcores").c_str());
    for (int r = rows; r >= 1; r--) {
      double lo = top * (r - 1) / rows, hi = top * r / rows;
      bool cap_row = cap > lo && cap <= hi;
      std::printf("%10.0f |", hi);
      for (int col = 0; col < cols; col++) {
        char ch = ' ';
        if (periodic[col] > lo) {
          ch = '#';
        } else if (total[col] > lo) {
          ch = '+';
        } else if (cap_row) {
          ch = '-';
        }
        std::putchar(ch);
      }
      std::putchar('\n');
    }
    std::printf("%10s +%s\n", "", std::string(cols, '-').c_str());
  }
}

}  // namespace

void addReservationCommands(CLI::App& root, CliContext& ctx) {
  auto* res = root.add_subcommand(
      "reservation", "Reservations: create from flags, or submit YARN reservation JSON (-f)");
  res->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto id = std::make_shared<std::string>();
  auto queue = std::make_shared<std::string>();

  auto* n = res->add_subcommand("new", "Get a fresh reservation id");
  n->callback([&ctx] {
    std::string rid = newId(ctx);
    if (ctx.json) {
      printJson("reservations", json{{"reservation_id", rid}});
    } else {
      std::cout << rid << "\n";
    }
  });

  auto ca = std::make_shared<CreateArgs>();
  auto* c = res->add_subcommand(
      "create", "Plan and admit a reservation of one stage given by flags; prints its allocations");
  c->add_option("--queue", ca->queue, "Reservable queue (default: default)");
  c->add_option("--start", ca->start,
                "Earliest start: ISO-8601 UTC (2026-12-01T10:00:00Z), now or now+DURATION "
                "(default now)");
  c->add_option("--deadline", ca->deadline, "Latest end, same forms (e.g. now+3h)")->required();
  c->add_option("--containers", ca->containers, "How many containers")->required();
  c->add_option("--memory", ca->memory, "Memory of each container, e.g. 512MiB, 1GiB")->required();
  c->add_option("--vcores", ca->vcores, "Vcores of each container (default 1)");
  c->add_option("--duration", ca->duration, "How long each container runs, e.g. 90s, 10m, 1h30m")
      ->required();
  c->add_option("--gang", ca->gang,
                "Containers that must run at the same time (default 1: any number)");
  c->add_option("--every", ca->every,
                "Repeat with this period, e.g. 1h, 1d (default: one-off); must divide 1d");
  c->add_option("--name", ca->name, "A name for people");
  c->add_option("--recurrence-key", ca->recurrence_key,
                "Apps submitted with this recurrence key run in the reservation");
  c->add_option("--reprovision-budget", ca->budget,
                "Container time dynamic reprovisioning may add per instance, e.g. 30m (default 0)");
  c->add_option("--id", ca->id, "Reservation id from 'reservation new' (default: a fresh one)");
  c->callback([&ctx, ca] { create(ctx, *ca); });

  auto* s = res->add_subcommand("submit", "Plan and admit a reservation from a YARN JSON file");
  s->add_option("-f,--file", *file, "YARN reservation JSON")->required();
  s->callback([&ctx, file] { submit(ctx, *file); });
  auto* u = res->add_subcommand("update", "Replace a reservation's definition (try-and-swap)");
  u->add_option("-f,--file", *file, "YARN reservation JSON")->required();
  u->add_option("id", *id, "Reservation id (default: the file's reservation-id)");
  u->callback([&ctx, file, id] { update(ctx, *file, *id); });
  auto* d = res->add_subcommand("delete", "Delete a reservation and free its capacity");
  d->add_option("id", *id, "Reservation id")->required();
  d->callback([&ctx, id] { remove(ctx, *id); });
  auto* l = res->add_subcommand("list", "List reservations");
  l->add_option("--queue", *queue, "Only this queue");
  l->callback([&ctx, queue] { list(ctx, "", *queue, false); });
  auto* sh =
      res->add_subcommand("show", "One reservation with allocations and reprovisioning history");
  sh->add_option("id", *id, "Reservation id")->required();
  sh->callback([&ctx, id] { list(ctx, *id, "", true); });

  auto* plan = root.add_subcommand("plan", "The reservation plan");
  plan->require_subcommand(1);
  auto from = std::make_shared<std::string>("now");
  auto to = std::make_shared<std::string>();
  auto width = std::make_shared<int>(96);
  auto* ps =
      plan->add_subcommand("show", "Chart of plan load over time per resource with capacity");
  ps->add_option("--from", *from,
                 "Start: ISO-8601 UTC (2026-12-01T10:00:00Z), now, now+DURATION or now-DURATION "
                 "(default now)");
  ps->add_option("--to", *to, "End, same forms (default: --from + 1 day)");
  ps->add_option("--width", *width, "Chart columns")->check(CLI::Range(10, 1000));
  ps->callback([&ctx, from, to, width] { planShow(ctx, *from, *to, *width); });
}

}  // namespace morpheus::cli
