#include "testdata/coredump/coredump_tools.h"

#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "testdata/harness/subprocess.h"
#include "testdata/harness/tools.h"

namespace unwindd::harness {
namespace {

std::string Failure(absl::string_view tool, const ToolOutput& out) {
  return absl::StrCat(tool, " exited with ", out.exit_code, "; stderr:\n",
                      out.stderr_text.substr(0, 4000), "\nstdout:\n",
                      out.stdout_text.substr(0, 4000));
}

}  // namespace

absl::StatusOr<std::string> SystemdTools() {
  absl::StatusOr<ToolOutput> out =
      RunTool({"bash", RunfilesRoot() + "/scripts/systemd_tools.sh"}, absl::Minutes(15));
  if (!out.ok()) return out.status();
  if (out->exit_code == 77) {
    return absl::UnavailableError(absl::StrCat(
        "systemd's tools: ", absl::StripTrailingAsciiWhitespace(out->stderr_text)));
  }
  if (out->exit_code != 0) return absl::InternalError(Failure("systemd_tools.sh", *out));
  return std::string(absl::StripTrailingAsciiWhitespace(out->stdout_text));
}

std::string ExportEntry(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    bool binary = false;
    for (unsigned char c : value) binary |= c < 32 && c != '\t';
    if (!binary) {
      absl::StrAppend(&out, name, "=", value, "\n");
      continue;
    }
    absl::StrAppend(&out, name, "\n");
    for (int i = 0; i < 8; ++i) out += static_cast<char>(uint64_t{value.size()} >> (8 * i));
    absl::StrAppend(&out, value, "\n");
  }
  return out + "\n";
}

absl::Status WriteJournal(const std::string& tools, const std::string& exported,
                          const std::string& journal) {
  const std::string input = journal + ".export";
  std::ofstream(input, std::ios::binary) << exported;
  absl::StatusOr<ToolOutput> out = RunTool(
      {"sh", "-c",
       absl::StrCat("LD_LIBRARY_PATH='", tools, "/lib' '", tools,
                    "/systemd-journal-remote' --output='", journal, "' - < '", input, "'")},
      absl::Seconds(60));
  if (!out.ok()) return out.status();
  if (out->exit_code != 0) return absl::InternalError(Failure("systemd-journal-remote", *out));
  return absl::OkStatus();
}

absl::StatusOr<CoredumpctlInfo> Coredumpctl(const std::string& tools,
                                            const std::string& journal,
                                            const std::string& match) {
  absl::StatusOr<ToolOutput> out = RunTool(
      {"env", "TZ=UTC", "SYSTEMD_COLORS=0", "LD_LIBRARY_PATH=" + tools + "/lib",
       tools + "/coredumpctl", "--no-pager", "--file=" + journal, "-1", "info", match},
      absl::Seconds(60));
  if (!out.ok()) return out.status();
  if (out->exit_code != 0) {
    if (absl::StrContains(out->stderr_text, "No match") ||
        absl::StrContains(out->stderr_text, "No coredumps")) {
      return absl::NotFoundError(out->stderr_text);
    }
    return absl::InternalError(Failure("coredumpctl", *out));
  }
  CoredumpctlInfo info;
  for (absl::string_view line : absl::StrSplit(out->stdout_text, '\n')) {
    const size_t colon = line.find(": ");
    if (colon == absl::string_view::npos) continue;
    const std::string label(absl::StripAsciiWhitespace(line.substr(0, colon)));
    if (label.empty() || info.contains(label)) continue;
    info[label] = std::string(absl::StripAsciiWhitespace(line.substr(colon + 2)));
  }
  if (!info.contains("PID")) return absl::InternalError(Failure("coredumpctl (no PID)", *out));
  return info;
}

}  // namespace unwindd::harness
