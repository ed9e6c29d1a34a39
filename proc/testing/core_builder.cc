#include "proc/testing/core_builder.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

#include "gtest/gtest.h"

namespace unwindd::proc::testing {
namespace {

uint64_t Align4(uint64_t v) { return (v + 3) & ~uint64_t{3}; }

}  // namespace

void PutLe(std::vector<uint8_t>& b, size_t offset, uint64_t v, int size) {
  if (b.size() < offset + size) b.resize(offset + size);
  for (int i = 0; i < size; ++i)
    b[offset + i] = static_cast<uint8_t>(v >> (8 * i));
}

void CoreBuilder::AddThread(pid_t tid, uint64_t pc, uint64_t sp, int cursig,
                            uint64_t rbp) {
  // struct elf_prstatus on x86_64: 336 bytes, pr_cursig at 12, pr_pid at 32,
  // pr_reg (user_regs_struct) at 112: rbp slot 4, rip slot 16, rsp slot 19.
  std::vector<uint8_t> d(336, 0);
  PutLe(d, 12, static_cast<uint16_t>(cursig), 2);
  PutLe(d, 32, static_cast<uint32_t>(tid), 4);
  PutLe(d, 112 + 4 * 8, rbp, 8);
  PutLe(d, 112 + 16 * 8, pc, 8);
  PutLe(d, 112 + 19 * 8, sp, 8);
  AddNote("CORE", NT_PRSTATUS, std::move(d));
}

void CoreBuilder::AddSigInfo(int signo, int code, uint64_t addr_or_pid) {
  std::vector<uint8_t> d(128, 0);
  PutLe(d, 0, static_cast<uint32_t>(signo), 4);
  PutLe(d, 8, static_cast<uint32_t>(code), 4);
  PutLe(d, 16, addr_or_pid, 8);
  AddNote("CORE", 0x53494749, std::move(d));
}

void CoreBuilder::SetPrpsInfo(pid_t pid, const std::string& fname) {
  std::vector<uint8_t> d(136, 0);
  PutLe(d, 24, static_cast<uint32_t>(pid), 4);
  for (size_t i = 0; i < fname.size() && i < 15; ++i) d[40 + i] = fname[i];
  AddNote("CORE", NT_PRPSINFO, std::move(d));
}

void CoreBuilder::SetAuxv(
    const std::vector<std::pair<uint64_t, uint64_t>>& auxv) {
  std::vector<uint8_t> d;
  size_t off = 0;
  for (const auto& [t, v] : auxv) {
    PutLe(d, off, t, 8);
    PutLe(d, off + 8, v, 8);
    off += 16;
  }
  PutLe(d, off, 0, 8);
  PutLe(d, off + 8, 0, 8);
  AddNote("CORE", NT_AUXV, std::move(d));
}

void CoreBuilder::SetNtFile(const std::vector<File>& files) {
  std::vector<uint8_t> d;
  PutLe(d, 0, files.size(), 8);
  PutLe(d, 8, 4096, 8);
  size_t off = 16;
  for (const File& f : files) {
    PutLe(d, off, f.start, 8);
    PutLe(d, off + 8, f.end, 8);
    PutLe(d, off + 16, f.offset / 4096, 8);
    off += 24;
  }
  for (const File& f : files) {
    d.insert(d.end(), f.path.begin(), f.path.end());
    d.push_back(0);
  }
  AddNote("CORE", 0x46494c45, std::move(d));
}

void CoreBuilder::AddNote(const std::string& name, uint32_t type,
                          std::vector<uint8_t> desc) {
  notes_.push_back({name, type, std::move(desc)});
}

void CoreBuilder::AddSegment(uint64_t vaddr, std::vector<uint8_t> data,
                             uint64_t memsz, uint32_t flags) {
  uint64_t m = memsz != 0 ? memsz : data.size();
  segments_.push_back({vaddr, m, flags, std::move(data)});
}

std::vector<uint8_t> CoreBuilder::Build(CoreLayout* layout) const {
  CoreLayout l;
  std::vector<uint8_t> out(64, 0);
  // Elf64_Ehdr.
  out[0] = 0x7f;
  out[1] = 'E';
  out[2] = 'L';
  out[3] = 'F';
  out[EI_CLASS] = ELFCLASS64;
  out[EI_DATA] = ELFDATA2LSB;
  out[EI_VERSION] = EV_CURRENT;
  PutLe(out, 16, ET_CORE, 2);
  PutLe(out, 18, EM_X86_64, 2);
  PutLe(out, 20, EV_CURRENT, 4);
  PutLe(out, 32, 64, 8);  // e_phoff
  PutLe(out, 52, 64, 2);  // e_ehsize
  PutLe(out, 54, 56, 2);  // e_phentsize
  const uint64_t phnum = 1 + segments_.size();
  PutLe(out, 56, phnum, 2);
  l.phdrs = 64;
  // Notes right after the program headers.
  std::vector<uint8_t> notes;
  for (const Note& n : notes_) {
    l.note_offsets.push_back(64 + phnum * 56 + notes.size());
    size_t at = notes.size();
    PutLe(notes, at, n.name.size() + 1, 4);
    PutLe(notes, at + 4, n.desc.size(), 4);
    PutLe(notes, at + 8, n.type, 4);
    notes.insert(notes.end(), n.name.begin(), n.name.end());
    notes.resize(Align4(notes.size() + 1), 0);
    notes.insert(notes.end(), n.desc.begin(), n.desc.end());
    notes.resize(Align4(notes.size()), 0);
  }
  l.notes = 64 + phnum * 56;
  l.notes_size = notes.size();
  out.resize(l.notes, 0);
  out.insert(out.end(), notes.begin(), notes.end());
  // PT_NOTE header.
  PutLe(out, 64, PT_NOTE, 4);
  PutLe(out, 64 + 8, l.notes, 8);
  PutLe(out, 64 + 32, notes.size(), 8);
  PutLe(out, 64 + 48, 4, 8);
  // Segments, page-aligned like the kernel's.
  for (size_t i = 0; i < segments_.size(); ++i) {
    const Segment& s = segments_[i];
    out.resize((out.size() + 4095) & ~size_t{4095}, 0);
    const uint64_t off = out.size();
    l.segment_offsets.push_back(off);
    out.insert(out.end(), s.data.begin(), s.data.end());
    const size_t ph = 64 + (1 + i) * 56;
    PutLe(out, ph, PT_LOAD, 4);
    PutLe(out, ph + 4, s.flags, 4);
    PutLe(out, ph + 8, off, 8);
    PutLe(out, ph + 16, s.vaddr, 8);
    PutLe(out, ph + 32, s.data.size(), 8);
    PutLe(out, ph + 40, s.memsz, 8);
    PutLe(out, ph + 48, 4096, 8);
  }
  if (layout != nullptr) *layout = l;
  return out;
}

std::string WriteTempFile(const std::vector<uint8_t>& bytes) {
  std::string path = ::testing::TempDir() + "/core_XXXXXX";
  int fd = mkostemp(path.data(), O_CLOEXEC);
  EXPECT_GE(fd, 0);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += n;
  }
  close(fd);
  return path;
}

}  // namespace unwindd::proc::testing
