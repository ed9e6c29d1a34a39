#include "proc/recorded_files.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "proc/core_elf.h"

namespace unwindd::proc {

std::optional<OpenedCandidate> OpenCandidate(const std::string& path) {
  memory::ScopedFd fd = memory::OpenNamedFile(path.c_str());
  if (!fd.valid()) return std::nullopt;
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  OpenedCandidate c;
  c.fd = std::make_shared<memory::ScopedFd>(std::move(fd));
  c.size = static_cast<uint64_t>(st.st_size);
  absl::StatusOr<std::unique_ptr<memory::Memory>> m =
      memory::CreateFileRegionMemory({{0, c.size, c.fd, 0}});
  if (!m.ok()) return std::nullopt;
  c.as_memory = *std::move(m);
  return c;
}

std::string FileBuildId(const OpenedCandidate& f) {
  absl::StatusOr<ElfImage> img = ReadElfImage(*f.as_memory, 0, ElfView::kFile);
  if (!img.ok()) return "";
  absl::StatusOr<std::string> id =
      ReadBuildId(*f.as_memory, *img, ElfView::kFile);
  return id.ok() ? *id : "";
}

ResolvedFiles ResolveRecordedFiles(
    const std::vector<Mapping>& mappings,
    const absl::flat_hash_map<std::string, std::string>& recorded_build_ids,
    const FileLookup& lookup, const std::string& executable,
    absl::string_view recorder) {
  ResolvedFiles out;
  std::vector<std::shared_ptr<const memory::ScopedFd>> fds;
  for (const Mapping& m : mappings) {
    if (!NamesFile(m) || out.index.contains(m.path)) continue;
    out.index[m.path] = out.files.size();
    CoreFileStatus st;
    st.recorded = m.path;
    auto id = recorded_build_ids.find(m.path);
    if (id != recorded_build_ids.end()) st.core_build_id = id->second;
    st.tried = CandidatePaths(lookup, m.path, m.path == executable);
    std::shared_ptr<const memory::ScopedFd> chosen;
    // The first candidate that is another build (--exe given for the
    // wrong build, say): said even when a later candidate is used.
    std::string rejected, rejected_id;
    for (const std::string& c : st.tried) {
      std::optional<OpenedCandidate> f = OpenCandidate(c);
      if (!f) continue;
      const std::string file_id = FileBuildId(*f);
      if (!st.core_build_id.empty() && !file_id.empty() &&
          file_id != st.core_build_id) {
        if (st.state != CoreFileStatus::State::kMismatch) {
          st.state = CoreFileStatus::State::kMismatch;
          st.file = c;
          st.file_build_id = file_id;
          rejected = c;
          rejected_id = file_id;
        }
        continue;
      }
      st.state = CoreFileStatus::State::kFound;
      st.file = c;
      st.file_build_id = file_id;
      chosen = f->fd;
      break;
    }
    if (st.state == CoreFileStatus::State::kFound && !rejected.empty()) {
      out.warnings.push_back(absl::StrFormat(
          "%s: %s has build-id %s but the %s recorded %s; not used, %s used instead",
          st.recorded, rejected, rejected_id, recorder, st.core_build_id, st.file));
    }
    if (st.state == CoreFileStatus::State::kMissing) {
      out.warnings.push_back(absl::StrFormat("%s: not found (tried %s)",
                                             st.recorded,
                                             absl::StrJoin(st.tried, ", ")));
    } else if (st.state == CoreFileStatus::State::kMismatch) {
      out.warnings.push_back(absl::StrFormat(
          "%s: %s has build-id %s but the %s recorded %s; not used",
          st.recorded, st.file, st.file_build_id, recorder, st.core_build_id));
    }
    fds.push_back(chosen);
    out.files.push_back(std::move(st));
  }
  for (const Mapping& m : mappings) {
    if (!NamesFile(m)) continue;
    const std::shared_ptr<const memory::ScopedFd>& fd = fds[out.index[m.path]];
    if (fd != nullptr) out.regions.push_back({m.start, m.end - m.start, fd, m.offset});
  }
  return out;
}

absl::string_view CoreFileStateName(CoreFileStatus::State state) {
  switch (state) {
    case CoreFileStatus::State::kFound:
      return "found";
    case CoreFileStatus::State::kMissing:
      return "missing";
    case CoreFileStatus::State::kMismatch:
      return "mismatch";
  }
  return "unknown";
}

}  // namespace unwindd::proc
