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

void printAllocations(const google::protobuf::RepeatedPtrField<v1::ResourceAllocation>& allocs) {
  for (const auto& a : allocs) {
    std::printf("  %s .. %s  memory %lld MiB, vcores %lld\n", formatTime(a.start_ms()).c_str(),
                formatTime(a.end_ms()).c_str(), static_cast<long long>(a.resource().memory_mib()),
                static_cast<long long>(a.resource().vcores()));
  }
}

std::string newId(const CliContext& ctx) {
  v1::NewReservationResponse resp;
  check(callRm(ctx, &v1::ReservationService::Stub::NewReservation, v1::NewReservationRequest(),
               &resp, Millis(10000), CallKind::kIdempotent),
        ctx);
  return resp.reservation_id();
}

void submit(const CliContext& ctx, const std::string& file, bool json_out) {
  auto req = rm::parseYarnSubmit(readFile(ctx, file));
  if (!req.isOk()) failWith(req.status().withContext(file));
  if (req->reservation_id().empty()) req->set_reservation_id(newId(ctx));
  if (req->user().empty()) req->set_user(ctx.user);  // "" = the token's user
  if (req->queue().empty()) req->set_queue("default");
  v1::SubmitReservationResponse resp;
  grpc::Status st = callRm(ctx, &v1::ReservationService::Stub::SubmitReservation, *req, &resp,
                           Millis(30000), CallKind::kNotIdempotent);
  checkFile(st, ctx);
  if (json_out) {
    std::cout << json({{"reservation-id", resp.reservation_id()},
                       {"resource-allocations", rm::yarnAllocationsJson(resp.allocations())}})
                     .dump(2)
              << "\n";
  } else {
    std::printf("reservation %s accepted\n", resp.reservation_id().c_str());
    printAllocations(resp.allocations());
  }
}

void update(const CliContext& ctx, const std::string& file, const std::string& id_arg,
            bool json_out) {
  auto parsed = rm::parseYarnSubmit(readFile(ctx, file));
  if (!parsed.isOk()) failWith(parsed.status().withContext(file));
  v1::UpdateReservationRequest req;
  req.set_reservation_id(id_arg.empty() ? parsed->reservation_id() : id_arg);
  if (req.reservation_id().empty()) failWith(invalidArgument("reservation-id", "is required"));
  req.set_user(parsed->user().empty() ? ctx.user : parsed->user());
  *req.mutable_definition() = parsed->definition();
  v1::UpdateReservationResponse resp;
  checkFile(callRm(ctx, &v1::ReservationService::Stub::UpdateReservation, req, &resp, Millis(30000),
                   CallKind::kNotIdempotent),
            ctx);
  if (json_out) {
    std::cout << json({{"reservation-id", req.reservation_id()},
                       {"resource-allocations", rm::yarnAllocationsJson(resp.allocations())}})
                     .dump(2)
              << "\n";
  } else {
    std::printf("reservation %s updated\n", req.reservation_id().c_str());
    printAllocations(resp.allocations());
  }
}

void list(const CliContext& ctx, const std::string& id, const std::string& queue, bool json_out,
          bool show) {
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
  if (json_out) {
    std::cout << rm::yarnListJson(resp, true).dump(2) << "\n";
    return;
  }
  if (!show) {
    std::printf("%-34s %-10s %-10s %-12s %-22s %-22s %s\n", "RESERVATION", "USER", "QUEUE",
                "PERIOD", "ARRIVAL", "DEADLINE", "STATUS");
    for (const auto& r : resp.reservations()) {
      const auto& d = r.definition();
      std::printf("%-34s %-10s %-10s %-12s %-22s %-22s %s\n", r.reservation_id().c_str(),
                  r.user().c_str(), r.queue().c_str(),
                  d.period_ms() == 0 ? "one-off" : formatDuration(Millis(d.period_ms())).c_str(),
                  formatTime(d.arrival_ms()).c_str(), formatTime(d.deadline_ms()).c_str(),
                  r.status().c_str());
    }
    return;
  }
  const auto& r = resp.reservations(0);
  const auto& d = r.definition();
  std::printf("reservation %s (%s)\n  user %s, queue %s, accepted %s, status %s%s%s\n",
              r.reservation_id().c_str(), d.name().c_str(), r.user().c_str(), r.queue().c_str(),
              formatTime(r.acceptance_ms()).c_str(), r.status().c_str(),
              r.status_reason().empty() ? "" : ": ", r.status_reason().c_str());
  std::printf("  window %s .. %s, period %s, %d stage(s)%s%s\n", formatTime(d.arrival_ms()).c_str(),
              formatTime(d.deadline_ms()).c_str(),
              d.period_ms() == 0 ? "one-off" : formatDuration(Millis(d.period_ms())).c_str(),
              d.stages_size(), d.recurrence_key().empty() ? "" : ", recurrence key ",
              d.recurrence_key().c_str());
  std::printf("  allocations (current instance):\n");
  printAllocations(r.allocations());
  std::printf("  reprovisioning budget: %lld container-ms, used %lld\n",
              static_cast<long long>(d.reprovision_budget_container_ms()),
              static_cast<long long>(r.reprovision_budget_used_container_ms()));
  if (r.reprovision_history_size() > 0) {
    std::printf("  reprovisioning history:\n");
    for (const auto& e : r.reprovision_history()) {
      std::printf("    %s %-12s %-7s +%lld MiB/%lld vcores for %s: %s\n",
                  formatTime(e.time_ms()).c_str(), e.policy().c_str(),
                  e.granted() ? "granted" : "denied",
                  static_cast<long long>(e.extra().memory_mib()),
                  static_cast<long long>(e.extra().vcores()),
                  formatDuration(Millis(e.duration_ms())).c_str(), e.reason().c_str());
    }
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
  std::printf("reservation %s deleted\n", id.c_str());
}

// A terminal chart of plan load per resource: one row per height band, one
// column per time bucket (max over the bucket's steps), '-' marks capacity.
void planShow(const CliContext& ctx, const std::string& from, const std::string& to, int width,
              bool json_out) {
  v1::GetPlanRequest req;
  req.set_start_ms(parseTimeArg(ctx, from, "--from"));
  req.set_end_ms(to.empty() ? req.start_ms() + 86400000 : parseTimeArg(ctx, to, "--to"));
  if (req.end_ms() <= req.start_ms()) failWith(invalidArgument("--to", "must be after --from"));
  v1::GetPlanResponse resp;
  check(callRm(ctx, &v1::ReservationService::Stub::GetPlan, req, &resp, Millis(30000),
               CallKind::kIdempotent),
        ctx);
  if (json_out) {
    json steps = json::array();
    for (const auto& s : resp.steps()) {
      steps.push_back(
          {{"start_ms", s.start_ms()},
           {"periodic",
            {{"memory_mib", s.periodic().memory_mib()}, {"vcores", s.periodic().vcores()}}},
           {"one_off",
            {{"memory_mib", s.one_off().memory_mib()}, {"vcores", s.one_off().vcores()}}}});
    }
    std::cout << json({{"step_ms", resp.step_ms()},
                       {"capacity",
                        {{"memory_mib", resp.capacity().memory_mib()},
                         {"vcores", resp.capacity().vcores()}}},
                       {"reservations", resp.reservations()},
                       {"steps", steps}})
                     .dump(2)
              << "\n";
    return;
  }
  std::printf("plan %s .. %s, step %s, %d reservation(s)\n", formatTime(req.start_ms()).c_str(),
              formatTime(req.end_ms()).c_str(), formatDuration(Millis(resp.step_ms())).c_str(),
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
    std::printf("\n%s (capacity %.0f%s)   # periodic  + one-off  - capacity\n",
                dim == 0 ? "memory" : "vcores", cap, dim == 0 ? " MiB" : "");
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
  auto* res = root.add_subcommand("reservation", "Reservations (YARN reservation JSON)");
  res->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto id = std::make_shared<std::string>();
  auto queue = std::make_shared<std::string>();

  auto* n = res->add_subcommand("new", "Get a fresh reservation id");
  n->callback([&ctx] {
    std::string rid = newId(ctx);
    if (ctx.json) {
      std::cout << json({{"reservation-id", rid}}).dump(2) << "\n";
    } else {
      std::cout << rid << "\n";
    }
  });
  auto* s = res->add_subcommand("submit", "Plan and admit a reservation from a YARN JSON file");
  s->add_option("-f,--file", *file, "YARN reservation JSON")->required();
  s->callback([&ctx, file] { submit(ctx, *file, ctx.json); });
  auto* u = res->add_subcommand("update", "Replace a reservation's definition (try-and-swap)");
  u->add_option("-f,--file", *file, "YARN reservation JSON")->required();
  u->add_option("id", *id, "Reservation id (default: the file's reservation-id)");
  u->callback([&ctx, file, id] { update(ctx, *file, *id, ctx.json); });
  auto* d = res->add_subcommand("delete", "Delete a reservation and free its capacity");
  d->add_option("id", *id, "Reservation id")->required();
  d->callback([&ctx, id] { remove(ctx, *id); });
  auto* l = res->add_subcommand("list", "List reservations");
  l->add_option("--queue", *queue, "Only this queue");
  l->callback([&ctx, queue] { list(ctx, "", *queue, ctx.json, false); });
  auto* sh =
      res->add_subcommand("show", "One reservation with allocations and reprovisioning history");
  sh->add_option("id", *id, "Reservation id")->required();
  sh->callback([&ctx, id] { list(ctx, *id, "", ctx.json, true); });

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
  ps->add_option("--to", *to, "Same forms (default from + 1 day)");
  ps->add_option("--width", *width, "Chart columns")->check(CLI::Range(10, 1000));
  ps->callback([&ctx, from, to, width] { planShow(ctx, *from, *to, *width, ctx.json); });
}

}  // namespace morpheus::cli
