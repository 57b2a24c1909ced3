#include "replay/snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/crc32c.h"
#include "core/log.h"

namespace ferry::replay {

namespace {

namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little, "snapshot files are little-endian");

constexpr char kMagic[8] = {'F', 'R', 'R', 'Y', 'S', 'N', 'A', 'P'};
constexpr char kEndMagic[8] = {'F', 'R', 'R', 'Y', 'E', 'N', 'D', '!'};
constexpr size_t kHeaderBytes = 36;
constexpr size_t kTrailerBytes = 16;
// schema, table, generations, times_sampled, masses, dedup, rate_limiter, counters.
constexpr uint32_t kSectionsBesideColumns = 8;
constexpr uint32_t kMaxSectionName = 256;
// Payloads are checksummed and written in chunks of this size while they are in cache.
constexpr size_t kChunkBytes = size_t{1} << 20;
constexpr int64_t kMaxDimension = int64_t{1} << 24;
constexpr int64_t kMaxRowElements = int64_t{1} << 32;

std::string ErrnoText() { return std::strerror(errno); }

std::string ColumnSection(const core::ColumnSpec& column) { return "column " + column.name; }

std::string Quoted(const std::string& section) { return "section '" + section + "'"; }

// Prefixes a module's error with the file it concerns.
Status InFile(const std::string& path, const Status& status) {
  return Status(status.code(), path + ": " + status.message());
}

class Encoder {
 public:
  template <typename T>
  void Put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void PutBytes(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

class Decoder {
 public:
  explicit Decoder(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  // False, reading nothing, when fewer than sizeof(T) bytes are left.
  template <typename T>
  bool Get(T* value) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (left() < sizeof(T)) return false;
    std::memcpy(value, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return true;
  }
  size_t left() const { return bytes_.size() - offset_; }

 private:
  const std::vector<uint8_t>& bytes_;
  size_t offset_ = 0;
};

std::vector<uint8_t> SectionHeader(const std::string& name, uint64_t length, uint32_t crc) {
  Encoder e;
  e.Put(static_cast<uint32_t>(name.size()));
  e.PutBytes(name.data(), name.size());
  e.Put(length);
  e.Put(crc);
  e.Put(core::Crc32c(0, e.bytes().data(), e.bytes().size()));
  return e.bytes();
}

// Appends sections to a file. A section's header goes in as a placeholder and
// is filled in once the streamed payload's length and checksum are known.
class SectionWriter {
 public:
  SectionWriter(int fd, const std::string& path) : fd_(fd), path_(path) {}

  Status Append(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    while (size > 0) {
      const ssize_t n = ::write(fd_, p, std::min(size, kChunkBytes));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Unavailable(path_ + ": write failed: " + ErrnoText());
      p += n;
      size -= static_cast<size_t>(n);
      offset_ += static_cast<uint64_t>(n);
    }
    return Status::Ok();
  }

  Status Begin(const std::string& name) {
    name_ = name;
    header_offset_ = offset_;
    length_ = 0;
    crc_ = 0;
    const std::vector<uint8_t> placeholder = SectionHeader(name, 0, 0);
    return Append(placeholder.data(), placeholder.size());
  }

  Status Payload(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t done = 0; done < size; done += kChunkBytes) {
      const size_t n = std::min(kChunkBytes, size - done);
      crc_ = core::Crc32c(crc_, p + done, n);
      FERRY_RETURN_IF_ERROR(Append(p + done, n));
    }
    length_ += size;
    return Status::Ok();
  }

  Status End() {
    const std::vector<uint8_t> header = SectionHeader(name_, length_, crc_);
    size_t done = 0;
    while (done < header.size()) {
      const ssize_t n = ::pwrite(fd_, header.data() + done, header.size() - done,
                                 static_cast<off_t>(header_offset_ + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Unavailable(path_ + ": write failed: " + ErrnoText());
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  }

  Status Section(const std::string& name, const std::vector<uint8_t>& payload) {
    FERRY_RETURN_IF_ERROR(Begin(name));
    FERRY_RETURN_IF_ERROR(Payload(payload.data(), payload.size()));
    return End();
  }

  // A per-slot array the table only hands out one value at a time.
  template <typename T, typename Get>
  Status Array(const std::string& name, int64_t count, Get get) {
    FERRY_RETURN_IF_ERROR(Begin(name));
    std::vector<T> chunk(kChunkBytes / sizeof(T));
    for (int64_t first = 0; first < count; first += static_cast<int64_t>(chunk.size())) {
      const int64_t n = std::min<int64_t>(static_cast<int64_t>(chunk.size()), count - first);
      for (int64_t i = 0; i < n; ++i) chunk[i] = get(first + i);
      FERRY_RETURN_IF_ERROR(Payload(chunk.data(), static_cast<size_t>(n) * sizeof(T)));
    }
    return End();
  }

  uint64_t offset() const { return offset_; }

 private:
  int fd_;
  const std::string& path_;
  uint64_t offset_ = 0;
  std::string name_;
  uint64_t header_offset_ = 0;
  uint64_t length_ = 0;
  uint32_t crc_ = 0;
};

std::vector<uint8_t> EncodeDedup(const Deduplicator& dedup) {
  const std::vector<Deduplicator::ActorRecord> records = dedup.Export();
  Encoder e;
  e.Put(static_cast<uint32_t>(records.size()));
  for (const auto& r : records) {
    e.Put(r.actor);
    e.Put(r.epoch);
    e.Put(r.next_unseen);
    e.Put(r.inserted);
    e.Put(static_cast<uint64_t>(r.above.size()));
    e.PutBytes(r.above.data(), r.above.size() * sizeof(uint64_t));
  }
  return e.bytes();
}

std::vector<uint8_t> EncodeCounters(const ShardCounters& c) {
  Encoder e;
  for (int64_t v : {c.samples_total, c.samples_refused, c.updates_applied, c.updates_stale,
                    c.duplicates_dropped, c.bad_messages}) {
    e.Put(v);
  }
  return e.bytes();
}

Status WriteContents(SectionWriter& w, const ShardView& view) {
  const Table& table = *view.table;
  const core::Schema& schema = table.schema();
  const int64_t capacity = table.capacity();

  Encoder header;
  header.PutBytes(kMagic, sizeof(kMagic));
  header.Put(kSnapshotFormatVersion);
  header.Put(static_cast<uint32_t>(kSectionsBesideColumns + schema.columns.size()));
  header.Put(schema.Fingerprint());
  header.Put(static_cast<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count()));
  header.Put(core::Crc32c(0, header.bytes().data(), header.bytes().size()));
  FERRY_RETURN_IF_ERROR(w.Append(header.bytes().data(), header.bytes().size()));

  const std::string schema_text = schema.ToString();
  FERRY_RETURN_IF_ERROR(
      w.Section("schema", std::vector<uint8_t>(schema_text.begin(), schema_text.end())));
  Encoder meta;
  meta.Put(capacity);
  meta.Put(table.alpha());
  meta.Put(table.size());
  meta.Put(table.next_slot());
  const std::string selector = SelectorKindName(table.selector());
  meta.Put(static_cast<uint32_t>(selector.size()));
  meta.PutBytes(selector.data(), selector.size());
  FERRY_RETURN_IF_ERROR(w.Section("table", meta.bytes()));
  // Columns go out uncompressed whatever the table's compression, 1 MB at a time.
  std::vector<uint8_t> rows;
  for (size_t c = 0; c < schema.columns.size(); ++c) {
    const size_t row_bytes = schema.columns[c].row_bytes();
    const int64_t chunk = std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / row_bytes));
    rows.resize(static_cast<size_t>(chunk) * row_bytes);
    FERRY_RETURN_IF_ERROR(w.Begin(ColumnSection(schema.columns[c])));
    for (int64_t first = 0; first < capacity; first += chunk) {
      const int64_t count = std::min(chunk, capacity - first);
      table.ReadRows(static_cast<int>(c), first, count, rows.data());
      FERRY_RETURN_IF_ERROR(w.Payload(rows.data(), static_cast<size_t>(count) * row_bytes));
    }
    FERRY_RETURN_IF_ERROR(w.End());
  }
  FERRY_RETURN_IF_ERROR(w.Array<uint32_t>("generations", capacity,
                                          [&](int64_t slot) { return table.generation(slot); }));
  FERRY_RETURN_IF_ERROR(w.Array<uint32_t>("times_sampled", capacity,
                                          [&](int64_t slot) { return table.times_sampled(slot); }));
  FERRY_RETURN_IF_ERROR(w.Array<double>("masses", capacity, [&](int64_t slot) {
    return slot < table.size() ? table.mass(slot) : 0.0;
  }));
  FERRY_RETURN_IF_ERROR(w.Section("dedup", EncodeDedup(*view.dedup)));
  Encoder limiter;
  limiter.Put(view.limiter->inserts());
  limiter.Put(view.limiter->samples());
  FERRY_RETURN_IF_ERROR(w.Section("rate_limiter", limiter.bytes()));
  FERRY_RETURN_IF_ERROR(w.Section("counters", EncodeCounters(view.counters)));

  Encoder trailer;
  trailer.PutBytes(kEndMagic, sizeof(kEndMagic));
  trailer.Put(w.offset());
  return w.Append(trailer.bytes().data(), trailer.bytes().size());
}

Status SyncDirectory(const std::string& path) {
  std::string dir = fs::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Unavailable(dir + ": cannot open to sync it: " + ErrnoText());
  const bool synced = ::fsync(fd) == 0;
  const std::string error = synced ? "" : ErrnoText();
  ::close(fd);
  if (!synced) return Unavailable(dir + ": fsync failed: " + error);
  return Status::Ok();
}

// An open file descriptor, closed when it goes out of scope.
class FileCloser {
 public:
  explicit FileCloser(int fd) : fd_(fd) {}
  ~FileCloser() { ::close(fd_); }
  FileCloser(const FileCloser&) = delete;
  FileCloser& operator=(const FileCloser&) = delete;

 private:
  int fd_;
};

// Schema::ToString() text back into a Schema; nullopt for any other text.
std::optional<core::Schema> ParseSchema(const std::string& text) {
  constexpr core::DType kDTypes[] = {core::DType::kFloat32, core::DType::kInt32,
                                     core::DType::kInt64, core::DType::kUint8};
  core::Schema schema;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = std::min(text.find(", ", pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    pos = end + 2;
    const size_t colon = item.find(':');
    const size_t open = item.find('[');
    if (colon == 0 || colon == std::string::npos || open == std::string::npos || open < colon ||
        item.back() != ']') {
      return std::nullopt;
    }
    core::ColumnSpec column;
    column.name = item.substr(0, colon);
    const std::string dtype = item.substr(colon + 1, open - colon - 1);
    const auto* known = std::find_if(std::begin(kDTypes), std::end(kDTypes),
                                     [&](core::DType d) { return dtype == core::DTypeName(d); });
    if (known == std::end(kDTypes)) return std::nullopt;
    column.dtype = *known;
    const std::string dims = item.substr(open + 1, item.size() - open - 2);
    int64_t elements = 1;
    for (size_t d = 0; d < dims.size();) {
      const size_t comma = std::min(dims.find(',', d), dims.size());
      int dim = 0;
      const auto [ptr, ec] = std::from_chars(dims.data() + d, dims.data() + comma, dim);
      if (ec != std::errc() || ptr != dims.data() + comma || dim < 1 || dim > kMaxDimension) {
        return std::nullopt;
      }
      elements *= dim;
      if (elements > kMaxRowElements) return std::nullopt;
      column.shape.push_back(dim);
      d = comma + 1;
    }
    schema.columns.push_back(std::move(column));
  }
  if (schema.columns.empty() || schema.ToString() != text) return std::nullopt;
  return schema;
}

// Reads a snapshot file front to back, checking every length against what is
// left of the file before allocating for it.
class SnapshotReader {
 public:
  SnapshotReader(int fd, const std::string& path, uint64_t file_size)
      : fd_(fd), path_(path), file_size_(file_size) {}

  Status Error(const std::string& what) const { return DataLoss(path_ + ": " + what); }

  // Up to `size` bytes; fewer only at the end of the file.
  Result<size_t> ReadSome(void* out, size_t size) {
    auto* p = static_cast<uint8_t*>(out);
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::read(fd_, p + done, std::min(size - done, kChunkBytes));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Unavailable(path_ + ": read failed: " + ErrnoText());
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    offset_ += done;
    return done;
  }

  // Exactly `size` bytes of `where` ("section 'masses'", "the header").
  Status Read(void* out, size_t size, const std::string& where) {
    Result<size_t> n = ReadSome(out, size);
    if (!n.ok()) return n.status();
    if (*n < size) return Error("truncated in " + where);
    return Status::Ok();
  }

  // The next section, which must be `name`, into `out`: exactly `count`
  // elements when given, else any whole number of them.
  template <typename T>
  Status Section(const std::string& name, std::optional<uint64_t> count, std::vector<T>* out) {
    const std::string where = Quoted(name);
    uint32_t name_bytes = 0;
    FERRY_RETURN_IF_ERROR(Read(&name_bytes, sizeof(name_bytes), where));
    if (name_bytes > kMaxSectionName) return Error(where + ": header checksum mismatch");
    std::string stored(name_bytes, '\0');
    uint64_t length = 0;
    uint32_t crc = 0;
    uint32_t header_crc = 0;
    FERRY_RETURN_IF_ERROR(Read(stored.data(), stored.size(), where));
    FERRY_RETURN_IF_ERROR(Read(&length, sizeof(length), where));
    FERRY_RETURN_IF_ERROR(Read(&crc, sizeof(crc), where));
    FERRY_RETURN_IF_ERROR(Read(&header_crc, sizeof(header_crc), where));
    const std::vector<uint8_t> expected_header = SectionHeader(stored, length, crc);
    uint32_t computed = 0;
    std::memcpy(&computed, expected_header.data() + expected_header.size() - sizeof(computed),
                sizeof(computed));
    if (computed != header_crc) return Error(where + ": header checksum mismatch");
    if (stored != name) return Error("expected " + where + ", found '" + stored + "'");
    uint64_t expected = 0;
    if (count.has_value() && __builtin_mul_overflow(*count, sizeof(T), &expected)) {
      return Error(where + ": its table meta describes an impossible size");
    }
    if (count.has_value() && length != expected) {
      return Error(where + " has " + std::to_string(length) + " bytes, expected " +
                   std::to_string(expected));
    }
    if (length % sizeof(T) != 0) {
      return Error(where + " has " + std::to_string(length) + " bytes, not a whole number of " +
                   std::to_string(sizeof(T)) + "-byte values");
    }
    if (length > file_size_ - offset_) return Error("truncated in " + where);
    sections_.push_back({name, offset_, length, crc});
    out->resize(length / sizeof(T));
    FERRY_RETURN_IF_ERROR(Read(out->data(), length, where));
    if (core::Crc32c(0, out->data(), length) != crc) return Error(where + " checksum mismatch");
    return Status::Ok();
  }

  uint64_t offset() const { return offset_; }
  uint64_t file_size() const { return file_size_; }
  std::vector<SnapshotSection> TakeSections() { return std::move(sections_); }

 private:
  int fd_;
  const std::string& path_;
  uint64_t file_size_;
  uint64_t offset_ = 0;
  std::vector<SnapshotSection> sections_;
};

Status ReadHeader(SnapshotReader& r, ShardSnapshot* s, uint32_t* section_count) {
  uint8_t header[kHeaderBytes];
  Result<size_t> n = r.ReadSome(header, sizeof(header));
  if (!n.ok()) return n.status();
  if (std::memcmp(header, kMagic, std::min(*n, sizeof(kMagic))) != 0 || *n == 0) {
    return r.Error("not a ferry snapshot (no FRRYSNAP magic)");
  }
  if (*n >= sizeof(kMagic) + sizeof(uint32_t)) {
    std::memcpy(&s->format_version, header + 8, sizeof(uint32_t));
    if (s->format_version != kSnapshotFormatVersion) {
      return r.Error("format version " + std::to_string(s->format_version) + ", this build reads " +
                     std::to_string(kSnapshotFormatVersion));
    }
  }
  if (*n < kHeaderBytes) return r.Error("truncated in the header");
  uint32_t crc = 0;
  std::memcpy(&crc, header + 32, sizeof(crc));
  if (core::Crc32c(0, header, 32) != crc) return r.Error("header checksum mismatch");
  std::memcpy(section_count, header + 12, sizeof(*section_count));
  std::memcpy(&s->schema_fingerprint, header + 16, sizeof(s->schema_fingerprint));
  std::memcpy(&s->created_unix_ms, header + 24, sizeof(s->created_unix_ms));
  return Status::Ok();
}

Status ReadSchemaAndTable(SnapshotReader& r, uint32_t section_count, ShardSnapshot* s) {
  std::vector<char> text;
  FERRY_RETURN_IF_ERROR(r.Section("schema", std::nullopt, &text));
  const std::string schema_text(text.begin(), text.end());
  std::optional<core::Schema> schema = ParseSchema(schema_text);
  if (!schema.has_value()) {
    return r.Error("section 'schema': '" + schema_text + "' is not a schema");
  }
  if (schema->Fingerprint() != s->schema_fingerprint) {
    return r.Error("section 'schema': its fingerprint differs from the header's");
  }
  if (section_count != kSectionsBesideColumns + schema->columns.size()) {
    return r.Error("header lists " + std::to_string(section_count) + " sections, the schema's " +
                   std::to_string(schema->columns.size()) + " columns need " +
                   std::to_string(kSectionsBesideColumns + schema->columns.size()));
  }
  s->schema = std::move(*schema);

  std::vector<uint8_t> bytes;
  FERRY_RETURN_IF_ERROR(r.Section("table", std::nullopt, &bytes));
  Decoder d(bytes);
  uint32_t selector_bytes = 0;
  if (!d.Get(&s->capacity) || !d.Get(&s->alpha) || !d.Get(&s->size) || !d.Get(&s->next_slot) ||
      !d.Get(&selector_bytes) || d.left() != selector_bytes) {
    return r.Error("section 'table': malformed");
  }
  const std::string selector(bytes.end() - selector_bytes, bytes.end());
  Result<SelectorKind> kind = ParseSelectorKind(selector);
  if (!kind.ok()) return r.Error("section 'table': unknown selector '" + selector + "'");
  s->selector = *kind;
  if (s->capacity < 1 || s->capacity > int64_t{std::numeric_limits<uint32_t>::max()} ||
      !std::isfinite(s->alpha) || s->alpha < 0) {
    return r.Error("section 'table': capacity " + std::to_string(s->capacity) + " / alpha " +
                   std::to_string(s->alpha) + " out of range");
  }
  if (s->size < 0 || s->size > s->capacity || s->next_slot < 0 || s->next_slot >= s->capacity ||
      (s->size < s->capacity && s->next_slot != s->size)) {
    return r.Error("section 'table': size " + std::to_string(s->size) + " and next slot " +
                   std::to_string(s->next_slot) + " do not fit capacity " +
                   std::to_string(s->capacity));
  }
  return Status::Ok();
}

Status ReadSlots(SnapshotReader& r, ShardSnapshot* s) {
  const auto capacity = static_cast<uint64_t>(s->capacity);
  s->columns.resize(s->schema.columns.size());
  for (size_t c = 0; c < s->schema.columns.size(); ++c) {
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(capacity, s->schema.columns[c].row_bytes(), &bytes)) {
      return r.Error(Quoted(ColumnSection(s->schema.columns[c])) + ": too large");
    }
    FERRY_RETURN_IF_ERROR(r.Section(ColumnSection(s->schema.columns[c]), bytes, &s->columns[c]));
  }
  FERRY_RETURN_IF_ERROR(r.Section("generations", capacity, &s->generations));
  FERRY_RETURN_IF_ERROR(r.Section("times_sampled", capacity, &s->times_sampled));
  FERRY_RETURN_IF_ERROR(r.Section("masses", capacity, &s->masses));
  for (int64_t slot = 0; slot < s->capacity; ++slot) {
    const double m = s->masses[slot];
    const bool stored = slot < s->size;
    if (!std::isfinite(m) || m < 0 || stored != (m > 0)) {
      return r.Error("section 'masses': slot " + std::to_string(slot) + " has mass " +
                     std::to_string(m) + (stored ? ", an item's must be > 0" : ", empty is 0"));
    }
  }
  return Status::Ok();
}

Status ReadShardState(SnapshotReader& r, ShardSnapshot* s) {
  std::vector<uint8_t> bytes;
  FERRY_RETURN_IF_ERROR(r.Section("dedup", std::nullopt, &bytes));
  Decoder d(bytes);
  uint32_t actors = 0;
  bool ok = d.Get(&actors);
  for (uint32_t i = 0; ok && i < actors; ++i) {
    Deduplicator::ActorRecord record;
    uint64_t above = 0;
    ok = d.Get(&record.actor) && d.Get(&record.epoch) && d.Get(&record.next_unseen) &&
         d.Get(&record.inserted) && d.Get(&above) && above <= d.left() / sizeof(uint64_t);
    record.above.resize(ok ? above : 0);
    for (uint64_t& sequence : record.above) d.Get(&sequence);
    s->dedup.push_back(std::move(record));
  }
  if (!ok || d.left() != 0) return r.Error("section 'dedup': malformed");
  Deduplicator check;
  if (Status valid = check.Import(s->dedup); !valid.ok()) {
    return r.Error("section 'dedup': " + valid.message());
  }

  FERRY_RETURN_IF_ERROR(r.Section("rate_limiter", 16, &bytes));
  Decoder limiter(bytes);
  FERRY_CHECK(limiter.Get(&s->limiter_inserts) && limiter.Get(&s->limiter_samples));
  if (s->limiter_inserts < 0 || s->limiter_samples < 0) {
    return r.Error("section 'rate_limiter': negative counts");
  }

  std::vector<int64_t> counters;
  FERRY_RETURN_IF_ERROR(r.Section("counters", 6, &counters));
  if (std::any_of(counters.begin(), counters.end(), [](int64_t v) { return v < 0; })) {
    return r.Error("section 'counters': negative counts");
  }
  ShardCounters& c = s->counters;
  c.samples_total = counters[0];
  c.samples_refused = counters[1];
  c.updates_applied = counters[2];
  c.updates_stale = counters[3];
  c.duplicates_dropped = counters[4];
  c.bad_messages = counters[5];
  return Status::Ok();
}

Status ReadTrailer(SnapshotReader& r) {
  const uint64_t trailer_offset = r.offset();
  uint8_t trailer[kTrailerBytes];
  Result<size_t> n = r.ReadSome(trailer, sizeof(trailer));
  if (!n.ok()) return n.status();
  if (*n < sizeof(trailer)) return r.Error("truncated before the end marker");
  uint64_t stored_offset = 0;
  std::memcpy(&stored_offset, trailer + sizeof(kEndMagic), sizeof(stored_offset));
  if (std::memcmp(trailer, kEndMagic, sizeof(kEndMagic)) != 0 || stored_offset != trailer_offset) {
    return r.Error("no end marker after the last section");
  }
  if (r.file_size() != r.offset()) {
    return r.Error(std::to_string(r.file_size() - r.offset()) +
                   " unexpected bytes after the end marker");
  }
  return Status::Ok();
}

}  // namespace

ShardCounters CountersOf(const StatsMeta& stats) {
  ShardCounters c;
  c.samples_total = stats.samples_total;
  c.samples_refused = stats.samples_refused;
  c.updates_applied = stats.updates_applied;
  c.updates_stale = stats.updates_stale;
  c.duplicates_dropped = stats.duplicates_dropped;
  c.bad_messages = stats.bad_messages;
  return c;
}

Status WriteSnapshot(const std::string& path, const ShardView& view) {
  FERRY_CHECK(view.table != nullptr && view.dedup != nullptr && view.limiter != nullptr);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Unavailable(tmp + ": cannot create: " + ErrnoText());
  SectionWriter writer(fd, tmp);
  Status status = WriteContents(writer, view);
  if (status.ok() && ::fsync(fd) != 0) status = Unavailable(tmp + ": fsync failed: " + ErrnoText());
  if (::close(fd) != 0 && status.ok()) {
    status = Unavailable(tmp + ": close failed: " + ErrnoText());
  }
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = Unavailable(tmp + ": cannot rename to " + path + ": " + ErrnoText());
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  return SyncDirectory(path);
}

Result<ShardSnapshot> ReadSnapshot(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const std::string why = path + ": cannot open: " + ErrnoText();
    return errno == ENOENT ? NotFound(why) : Unavailable(why);
  }
  FileCloser closer(fd);
  struct stat info {};
  if (::fstat(fd, &info) != 0) return Unavailable(path + ": cannot stat: " + ErrnoText());
  ShardSnapshot s;
  s.path = path;
  SnapshotReader reader(fd, path, static_cast<uint64_t>(info.st_size));
  uint32_t section_count = 0;
  FERRY_RETURN_IF_ERROR(ReadHeader(reader, &s, &section_count));
  FERRY_RETURN_IF_ERROR(ReadSchemaAndTable(reader, section_count, &s));
  FERRY_RETURN_IF_ERROR(ReadSlots(reader, &s));
  FERRY_RETURN_IF_ERROR(ReadShardState(reader, &s));
  FERRY_RETURN_IF_ERROR(ReadTrailer(reader));
  s.sections = reader.TakeSections();
  return s;
}

Status RestoreShard(const ShardSnapshot& s, Table* table, Deduplicator* dedup, RateLimiter* limiter,
                    StatsMeta* stats) {
  if (!(s.schema == table->schema())) {
    return InvalidArgument(s.path + ": schema " + s.schema.ToString() +
                           " differs from this shard's " + table->schema().ToString());
  }
  if (s.capacity != table->capacity()) {
    return InvalidArgument(s.path + ": capacity " + std::to_string(s.capacity) +
                           " differs from this shard's " + std::to_string(table->capacity()) +
                           " (replay.capacity)");
  }
  if (s.selector != table->selector()) {
    return InvalidArgument(s.path + ": selector " + SelectorKindName(s.selector) +
                           " differs from this shard's " + SelectorKindName(table->selector()) +
                           " (replay.selector)");
  }
  if (s.selector == SelectorKind::kPrioritized && s.alpha != table->alpha()) {
    return InvalidArgument(s.path + ": alpha " + std::to_string(s.alpha) +
                           " differs from this shard's " + std::to_string(table->alpha()) +
                           " (replay.alpha); stored masses are p^alpha");
  }
  const auto slots = static_cast<size_t>(s.capacity);
  bool sizes_match = s.columns.size() == s.schema.columns.size() && s.generations.size() == slots &&
                     s.times_sampled.size() == slots && s.masses.size() == slots &&
                     s.limiter_inserts >= 0 && s.limiter_samples >= 0;
  std::vector<const uint8_t*> columns;
  for (size_t c = 0; sizes_match && c < s.columns.size(); ++c) {
    sizes_match = s.columns[c].size() == slots * s.schema.columns[c].row_bytes();
    columns.push_back(s.columns[c].data());
  }
  if (!sizes_match) return InvalidArgument(s.path + ": arrays do not match capacity and schema");
  Deduplicator restored;
  if (Status imported = restored.Import(s.dedup); !imported.ok()) return InFile(s.path, imported);
  if (Status t = table->Restore(s.size, s.next_slot, columns, s.generations.data(),
                                s.times_sampled.data(), s.masses.data());
      !t.ok()) {
    return InFile(s.path, t);
  }
  *dedup = std::move(restored);
  limiter->Restore(s.limiter_inserts, s.limiter_samples);
  stats->samples_total = s.counters.samples_total;
  stats->samples_refused = s.counters.samples_refused;
  stats->updates_applied = s.counters.updates_applied;
  stats->updates_stale = s.counters.updates_stale;
  stats->duplicates_dropped = s.counters.duplicates_dropped;
  stats->bad_messages = s.counters.bad_messages;
  return Status::Ok();
}

std::string SnapshotFileName(uint32_t shard, uint64_t sequence) {
  char name[64];
  std::snprintf(name, sizeof(name), "shard-%u-%06llu.snap", shard,
                static_cast<unsigned long long>(sequence));
  return name;
}

Result<SnapshotListing> ListSnapshots(const std::string& dir, uint32_t shard) {
  SnapshotListing listing;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return listing;
  const std::string prefix = "shard-" + std::to_string(shard) + "-";
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const size_t digits_end = name.find_first_not_of("0123456789", prefix.size());
    if (digits_end == prefix.size() || digits_end == std::string::npos) continue;
    const std::string suffix = name.substr(digits_end);
    if (suffix != ".snap" && suffix != ".snap.tmp") continue;
    uint64_t sequence = 0;
    const auto [ptr, parse] =
        std::from_chars(name.data() + prefix.size(), name.data() + digits_end, sequence);
    if (parse != std::errc() || sequence == std::numeric_limits<uint64_t>::max()) continue;
    listing.next_sequence = std::max(listing.next_sequence, sequence + 1);
    if (suffix == ".snap") {
      listing.snapshots.push_back({sequence, it->path().string()});
    } else {
      listing.leftovers.push_back(it->path().string());
    }
  }
  if (ec) return Unavailable(dir + ": cannot list snapshots: " + ec.message());
  std::sort(listing.snapshots.begin(), listing.snapshots.end(),
            [](const SnapshotFile& a, const SnapshotFile& b) { return a.sequence < b.sequence; });
  return listing;
}

std::optional<NewestSnapshot> ReadNewestSnapshot(const SnapshotListing& listing) {
  for (auto it = listing.snapshots.rbegin(); it != listing.snapshots.rend(); ++it) {
    Result<ShardSnapshot> snapshot = ReadSnapshot(it->path);
    if (snapshot.ok()) return NewestSnapshot{*it, std::move(snapshot).value()};
    core::Log("refusing snapshot %s; %s", snapshot.status().message().c_str(),
              std::next(it) == listing.snapshots.rend() ? "no older one is left"
                                                        : "trying the previous one");
  }
  return std::nullopt;
}

}  // namespace ferry::replay
