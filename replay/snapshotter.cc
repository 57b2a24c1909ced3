#include "replay/snapshotter.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "core/log.h"

namespace ferry::replay {

namespace {

namespace fs = std::filesystem;

// What a snapshot child reports through its pipe just before it exits.
struct ChildReport {
  double write_ms = 0;
  char error[1024] = {};  // Empty when the snapshot was written.
};
static_assert(sizeof(ChildReport) <= PIPE_BUF, "the report must arrive in one write");

[[noreturn]] void RunChild(const std::string& path, const ShardView& view, int report_fd,
                           pid_t parent) {
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(2);
  // Let go of the shard's sockets, so a restarted shard can bind its port at
  // once. Best effort: where close_range is missing they close when we exit.
  if (report_fd > 3) close_range(3, static_cast<unsigned>(report_fd) - 1, 0);
  close_range(static_cast<unsigned>(std::max(report_fd + 1, 3)), ~0U, 0);
  const double start = core::NowSeconds();
  const Status status = WriteSnapshot(path, view);
  ChildReport report;
  report.write_ms = (core::NowSeconds() - start) * 1e3;
  if (!status.ok()) {
    std::snprintf(report.error, sizeof(report.error), "%s", status.message().c_str());
  }
  const bool reported = ::write(report_fd, &report, sizeof(report)) == sizeof(report);
  _exit(status.ok() && reported ? 0 : 1);
}

double FileMegabytes(const std::string& path) {
  std::error_code ec;
  const auto bytes = fs::file_size(path, ec);
  return ec ? 0.0 : static_cast<double>(bytes) / 1e6;
}

std::string DescribeExit(pid_t reaped, int status) {
  if (reaped <= 0) return "vanished without a report";
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "exited with status " + std::to_string(WEXITSTATUS(status)) + " without a report";
}

}  // namespace

Snapshotter::Snapshotter(std::string dir, uint32_t shard_id, double period_seconds)
    : dir_(std::move(dir)), shard_id_(shard_id), period_seconds_(period_seconds) {}

Snapshotter::~Snapshotter() {
  if (child_.pid <= 0) return;
  kill(child_.pid, SIGKILL);
  waitpid(child_.pid, nullptr, 0);
  close(child_.result_fd);
}

Snapshotter::Mark Snapshotter::MarkOf(const ShardView& view) {
  return Mark{view.limiter->inserts(), view.limiter->samples(), view.counters};
}

Status Snapshotter::Restore(Table* table, Deduplicator* dedup, RateLimiter* limiter,
                            StatsMeta* stats) {
  if (dir_.empty()) return Status::Ok();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Unavailable("snapshot directory " + dir_ + ": cannot create: " + ec.message());
  Result<SnapshotListing> listing = ListSnapshots(dir_, shard_id_);
  if (!listing.ok()) return listing.status();
  for (const auto& leftover : listing->leftovers) {
    core::Log("removing %s, a snapshot whose writing was interrupted", leftover.c_str());
    fs::remove(leftover, ec);
  }
  next_sequence_ = listing->next_sequence;
  restored_ = true;
  const double start = core::NowSeconds();
  next_due_ = start + period_seconds_;
  std::optional<NewestSnapshot> newest = ReadNewestSnapshot(*listing);
  if (!newest.has_value()) {
    core::Log("no valid snapshot of shard %u in %s; starting empty", shard_id_, dir_.c_str());
    return Status::Ok();
  }
  if (Status s = RestoreShard(newest->snapshot, table, dedup, limiter, stats); !s.ok()) {
    return Status(s.code(), s.message() + "; move the snapshots away or set replay.snapshot_dir " +
                                "to start afresh");
  }
  last_valid_sequence_ = newest->file.sequence;
  written_ = Mark{limiter->inserts(), limiter->samples(), newest->snapshot.counters};
  durable_ = dedup->Watermarks();
  core::Log("restored %lld items from %s (%.0f ms)", static_cast<long long>(table->size()),
            newest->file.path.c_str(), (core::NowSeconds() - start) * 1e3);
  return Status::Ok();
}

void Snapshotter::Tick(const std::function<ShardView()>& view) {
  if (dir_.empty()) return;
  FERRY_CHECK(restored_);
  if (child_.pid > 0) Reap(ReapMode::kPoll);
  const double now = core::NowSeconds();
  if (child_.pid > 0 || period_seconds_ <= 0 || now < next_due_) return;
  next_due_ = now + period_seconds_;
  const ShardView state = view();
  if (MarkOf(state) != written_) Start(state);
}

void Snapshotter::Start(const ShardView& view) {
  Child child;
  child.sequence = next_sequence_++;
  child.path = dir_ + "/" + SnapshotFileName(shard_id_, child.sequence);
  child.mark = MarkOf(view);
  child.durable = view.dedup->Watermarks();
  child.items = view.table->size();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    core::Log("snapshot %s not started: pipe: %s", child.path.c_str(), std::strerror(errno));
    return;
  }
  const pid_t parent = getpid();
  const double start = core::NowSeconds();
  const pid_t pid = fork();
  if (pid == 0) RunChild(child.path, view, fds[1], parent);
  child.fork_ms = (core::NowSeconds() - start) * 1e3;
  close(fds[1]);
  if (pid < 0) {
    core::Log("snapshot %s not started: fork: %s", child.path.c_str(), std::strerror(errno));
    close(fds[0]);
    return;
  }
  child.pid = pid;
  child.result_fd = fds[0];
  child_ = std::move(child);
}

void Snapshotter::Reap(ReapMode mode) {
  int status = 0;
  pid_t reaped;
  do {
    reaped = waitpid(child_.pid, &status, WNOHANG);
  } while (reaped < 0 && errno == EINTR);
  if (reaped == 0 && mode == ReapMode::kPoll) return;  // Still writing.
  if (reaped == 0) {
    kill(child_.pid, SIGKILL);
    do {
      reaped = waitpid(child_.pid, &status, 0);
    } while (reaped < 0 && errno == EINTR);
  }
  Child done = std::exchange(child_, Child{});
  ChildReport report;
  ssize_t n;
  do {
    n = read(done.result_fd, &report, sizeof(report));
  } while (n < 0 && errno == EINTR);
  close(done.result_fd);
  const bool reported = n == static_cast<ssize_t>(sizeof(report));
  std::error_code ec;
  if (!reported && mode == ReapMode::kAbandon && fs::exists(done.path, ec)) {
    // Killed after its rename: the file is complete.
    Written(done.sequence, done.mark, std::move(done.durable));
  } else if (!reported && mode == ReapMode::kAbandon) {
    fs::remove(done.path + ".tmp", ec);
    core::Log("snapshot %s abandoned for the final one", done.path.c_str());
  } else if (!reported) {
    core::Log("snapshot %s failed: its writer %s", done.path.c_str(),
              DescribeExit(reaped, status).c_str());
  } else if (report.error[0] != '\0') {
    core::Log("snapshot failed: %s", report.error);
  } else {
    core::Log(
        "snapshot %s: %lld items, %.1f MB written in %.0f ms by a forked child; "
        "fork paused the shard %.2f ms",
        done.path.c_str(), static_cast<long long>(done.items), FileMegabytes(done.path),
        report.write_ms, done.fork_ms);
    Written(done.sequence, done.mark, std::move(done.durable));
  }
}

void Snapshotter::Finish(const ShardView& view) {
  if (dir_.empty()) return;
  FERRY_CHECK(restored_);
  if (child_.pid > 0) Reap(ReapMode::kAbandon);
  const Mark mark = MarkOf(view);
  if (mark == written_) {
    if (last_valid_sequence_ > 0) {
      core::Log("no final snapshot needed: nothing changed since %s/%s", dir_.c_str(),
                SnapshotFileName(shard_id_, last_valid_sequence_).c_str());
    }
    return;
  }
  const uint64_t sequence = next_sequence_++;
  const std::string path = dir_ + "/" + SnapshotFileName(shard_id_, sequence);
  const double start = core::NowSeconds();
  if (Status s = WriteSnapshot(path, view); !s.ok()) {
    core::Log("final snapshot failed: %s", s.message().c_str());
    return;
  }
  core::Log("final snapshot %s: %lld items, %.1f MB written in %.0f ms", path.c_str(),
            static_cast<long long>(view.table->size()), FileMegabytes(path),
            (core::NowSeconds() - start) * 1e3);
  Written(sequence, mark, view.dedup->Watermarks());
}

uint64_t Snapshotter::DurableThrough(uint32_t actor, uint64_t epoch) const {
  const auto it = durable_.find(actor);
  if (it == durable_.end() || it->second.epoch != epoch) return 0;
  return it->second.next_unseen;
}

void Snapshotter::Written(uint64_t sequence, const Mark& mark, Watermarks durable) {
  written_ = mark;
  durable_ = std::move(durable);
  const uint64_t keep_from = std::exchange(last_valid_sequence_, sequence);
  if (keep_from == 0) return;
  Result<SnapshotListing> listing = ListSnapshots(dir_, shard_id_);
  if (!listing.ok()) {
    core::Log("old snapshots not deleted: %s", listing.status().message().c_str());
    return;
  }
  for (const auto& file : listing->snapshots) {
    if (file.sequence >= keep_from) continue;
    std::error_code ec;
    fs::remove(file.path, ec);
    if (ec) core::Log("cannot delete old snapshot %s: %s", file.path.c_str(), ec.message().c_str());
  }
}

}  // namespace ferry::replay
