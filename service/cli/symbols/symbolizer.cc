#include "service/cli/symbols/symbolizer.h"

#include <cxxabi.h>
#ifndef UNWINDD_NO_LIBDW
#include <elfutils/libdwfl.h>
#endif
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memory/scoped_fd.h"

namespace unwindd::cli {

#ifdef UNWINDD_NO_LIBDW
// The aarch64 cross build has no libdw (third_party/system): no symbols.
struct Symbolizer::Module {
  std::string key;
  ModuleFiles files;
};
#else
struct Symbolizer::Module {
  std::string key;  // in Symbolizer::by_key_
  ModuleFiles files;
  const locate::LocateOptions* locate = nullptr;
  Dwfl* dwfl = nullptr;
  Dwfl_Module* mod = nullptr;
  // Answers by (rel_pc, return_address).
  absl::flat_hash_map<std::pair<uint64_t, bool>, std::string> answers;

  ~Module() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
};
#endif  // UNWINDD_NO_LIBDW

namespace {

#ifndef UNWINDD_NO_LIBDW

// libdwfl asks for the main file only when a module is reported without
// one; every module here is reported with its file.
int NoElf(Dwfl_Module*, void**, const char*, Dwarf_Addr, char**, Elf**) {
  errno = 0;
  return -1;
}

// libdwfl's find_debuginfo hook (called when the main file has no
// .symtab): the debug file the unwinder located, else one our locators
// find. MiniDebugInfo is not a file: libdwfl reads it itself.
int FindDebuginfo(Dwfl_Module*, void** userdata, const char*, Dwarf_Addr,
                  const char*, const char*, GElf_Word, char** debuginfo_file_name) {
  auto* m = static_cast<Symbolizer::Module*>(*userdata);
  errno = 0;
  if (m == nullptr) return -1;
  std::string path = m->files.debug_file;
  if (path.empty() && !m->files.file.empty()) {
    absl::StatusOr<locate::ElfFile> main = locate::ElfFile::Open(m->files.file);
    if (main.ok()) {
      const std::string& recorded =
          m->files.recorded_path.empty() ? m->files.file : m->files.recorded_path;
      absl::StatusOr<locate::DebugFileQuery> q = locate::DebugFileQueryFor(
          *main, recorded, locate::Want::kAny,
          /*fetch=*/m->locate->debuginfod != nullptr);
      if (q.ok()) {
        locate::LocateResult r = locate::LocateDebugFile(*q, *m->locate);
        if (r.found && r.found->kind == locate::Kind::kDebugFile) path = r.found->path;
      }
    }
    // Once per module: remember the answer, found or not.
    m->files.debug_file = path.empty() ? std::string("-") : path;
  }
  if (path.empty() || path == "-") return -1;
  int fd = memory::OpenNamedFile(path.c_str()).release();
  if (fd < 0) return -1;
  *debuginfo_file_name = strdup(path.c_str());
  return fd;
}

const Dwfl_Callbacks kCallbacks = {
    .find_elf = NoElf,
    .find_debuginfo = FindDebuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

// A file descriptor for `image`: an anonymous memory file, which libdwfl
// reads like any other.
int ImageFd(const std::vector<uint8_t>& image) {
  int fd = memfd_create("unwind-symbols-image", MFD_CLOEXEC);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < image.size()) {
    ssize_t n = write(fd, image.data() + done, image.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  return fd;
}
#endif  // UNWINDD_NO_LIBDW

}  // namespace

std::string Demangle(const std::string& name) {
  if (!absl::StartsWith(name, "_Z")) return name;
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (d == nullptr || status != 0) {
    free(d);
    return name;
  }
  std::string out(d);
  free(d);
  return out;
}

Symbolizer::Symbolizer(Options options) : options_(std::move(options)) {
  if (options_.max_modules == 0) options_.max_modules = 1;
}

Symbolizer::~Symbolizer() = default;

#ifdef UNWINDD_NO_LIBDW
Symbolizer::Module* Symbolizer::Get(const ModuleFiles&) { return nullptr; }

std::string Symbolizer::Symbolize(const ModuleFiles&, uint64_t, bool) { return ""; }
#else
Symbolizer::Module* Symbolizer::Get(const ModuleFiles& files) {
  std::string key =
      files.image != nullptr
          ? absl::StrFormat("image:%p:%u", files.image->data(), files.image->size())
          : absl::StrCat("file:", files.file, "\n", files.debug_file);
  auto it = by_key_.find(key);
  if (it != by_key_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return lru_.front().get();
  }
  if (lru_.size() >= options_.max_modules) {
    by_key_.erase(lru_.back()->key);
    lru_.pop_back();
  }
  auto m = std::make_unique<Module>();
  m->key = key;
  m->files = files;
  // Keyed by what the caller passed; FindDebuginfo may fill debug_file in.
  m->locate = &options_.locate;
  m->dwfl = dwfl_begin(&kCallbacks);
  ++opened_;
  if (m->dwfl != nullptr) {
    int fd = files.image != nullptr ? ImageFd(*files.image)
                                    : memory::OpenNamedFile(files.file.c_str()).release();
    if (fd >= 0) {
      dwfl_report_begin(m->dwfl);
      const std::string name = files.image != nullptr ? "[image]" : files.file;
      // add_p_vaddr with base 0: addresses are the file's own (bias 0),
      // whatever the file's first p_vaddr.
      m->mod = dwfl_report_elf(m->dwfl, name.c_str(), name.c_str(), fd, 0, true);
      if (m->mod == nullptr) close(fd);  // owned by the module only on success
      dwfl_report_end(m->dwfl, nullptr, nullptr);
      if (m->mod != nullptr) {
        void** slot = nullptr;
        dwfl_module_info(m->mod, &slot, nullptr, nullptr, nullptr, nullptr, nullptr,
                         nullptr);
        if (slot != nullptr) *slot = m.get();
      }
    }
  }
  lru_.push_front(std::move(m));
  by_key_[key] = lru_.begin();
  return lru_.front().get();
}

std::string Symbolizer::Symbolize(const ModuleFiles& module, uint64_t rel_pc,
                                  bool return_address) {
  Module* m = Get(module);
  if (m == nullptr || m->mod == nullptr) return "";
  auto key = std::make_pair(rel_pc, return_address);
  auto it = m->answers.find(key);
  if (it != m->answers.end()) return it->second;

  uint64_t lookup = return_address && rel_pc > 0 ? rel_pc - 1 : rel_pc;
  GElf_Off off = 0;
  GElf_Sym sym;
  const char* name =
      dwfl_module_addrinfo(m->mod, lookup, &off, &sym, nullptr, nullptr, nullptr);
  std::string out;
  if (name != nullptr && name[0] != '\0') {
    out = absl::StrFormat("%s+0x%x", options_.demangle ? Demangle(name) : name,
                          off + (rel_pc - lookup));
  }
  if (m->answers.size() >= options_.max_cached_addresses) m->answers.clear();
  m->answers.emplace(key, out);
  return out;
}

#endif  // UNWINDD_NO_LIBDW

}  // namespace unwindd::cli
