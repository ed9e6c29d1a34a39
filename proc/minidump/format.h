// The minidump file format's constants and fixed layouts, as Breakpad's
// src/google_breakpad/common/minidump_format.h (and Microsoft's
// MINIDUMP_* structures it mirrors) define them. Layouts are written as
// byte offsets and sizes, not as host structs, so that reading and writing
// never depend on the host's alignment rules: several minidump structures
// are 4-byte packed (MDRawModule is 108 bytes, not 112).
//
// Everything is little-endian. An RVA is a 32-bit offset from the start of
// the file; MDLocationDescriptor is {u32 data_size, u32 rva}.
#ifndef UNWINDD_PROC_MINIDUMP_FORMAT_H_
#define UNWINDD_PROC_MINIDUMP_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace unwindd::proc::minidump {

// MDRawHeader (32 bytes): signature, version, stream_count,
// stream_directory_rva, checksum, time_date_stamp, u64 flags.
inline constexpr uint32_t kSignature = 0x504d444d;  // "MDMP" in the file
inline constexpr uint32_t kVersion = 0xa793;        // low 16 bits
inline constexpr size_t kHeaderSize = 32;
// MDRawDirectory: stream_type, MDLocationDescriptor.
inline constexpr size_t kDirectoryEntrySize = 12;
inline constexpr size_t kLocationSize = 8;

// MDStreamType.
enum StreamType : uint32_t {
  kThreadListStream = 3,
  kModuleListStream = 4,
  kMemoryListStream = 5,
  kExceptionStream = 6,
  kSystemInfoStream = 7,
  kMemory64ListStream = 9,
  kMiscInfoStream = 15,
  // Breakpad's Linux streams ("Gg" = 0x4767).
  kBreakpadInfoStream = 0x47670001,
  kLinuxCpuInfo = 0x47670003,     // /proc/cpuinfo
  kLinuxProcStatus = 0x47670004,  // /proc/PID/status
  kLinuxLsbRelease = 0x47670005,  // /etc/lsb-release (or os-release)
  kLinuxCmdLine = 0x47670006,     // /proc/PID/cmdline
  kLinuxEnviron = 0x47670007,     // /proc/PID/environ
  kLinuxAuxv = 0x47670008,        // /proc/PID/auxv
  kLinuxMaps = 0x47670009,        // /proc/PID/maps
  kLinuxDsoDebug = 0x4767000a,    // MDRawDebug{32,64}
};

// MDRawThread (48 bytes): thread_id, suspend_count, priority_class,
// priority, u64 teb, MDMemoryDescriptor stack (u64 start + location),
// MDLocationDescriptor thread_context.
inline constexpr size_t kThreadSize = 48;
inline constexpr size_t kThreadStackStart = 24;
inline constexpr size_t kThreadStackLocation = 32;
inline constexpr size_t kThreadContextLocation = 40;

// MDMemoryDescriptor (16 bytes): u64 start_of_memory_range, location.
inline constexpr size_t kMemoryDescriptorSize = 16;
// MDMemoryDescriptor64 (16 bytes): u64 start, u64 data_size. The
// MINIDUMP_MEMORY64_LIST header is u64 count, u64 base_rva; the ranges'
// bytes follow one another from base_rva.
inline constexpr size_t kMemory64ListHeaderSize = 16;

// MDRawModule (MD_MODULE_SIZE, 108 bytes): u64 base_of_image,
// size_of_image, checksum, time_date_stamp, module_name_rva (MDString),
// MDVSFixedFileInfo (13 u32, at 24), cv_record (at 76), misc_record (at
// 84), reserved0[2], reserved1[2].
inline constexpr size_t kModuleSize = 108;
inline constexpr size_t kModuleSizeOfImage = 8;
inline constexpr size_t kModuleNameRva = 20;
inline constexpr size_t kModuleVersionInfo = 24;
inline constexpr size_t kModuleCvRecord = 76;
inline constexpr size_t kModuleMiscRecord = 84;
inline constexpr uint32_t kVsFixedFileInfoSignature = 0xfeef04bd;
inline constexpr uint32_t kVsFixedFileInfoVersion = 0x00010000;

// CodeView records. MDCVInfoELF: u32 'BpEL' then the raw GNU build-id
// (usually 20 bytes). MDCVInfoPDB70: u32 'RSDS', 16-byte GUID, u32 age,
// file name; older Breakpad writers put the first 16 bytes of the build-id
// in the GUID (ELF has no better identifier there).
inline constexpr uint32_t kCvSignatureElf = 0x4270454c;    // "LEpB" in the file
inline constexpr uint32_t kCvSignaturePdb70 = 0x53445352;  // "RSDS"

// MDString: u32 length in bytes (not counting the terminator), then
// UTF-16LE code units and a 0 terminator.
inline constexpr size_t kStringHeaderSize = 4;

// MDRawExceptionStream (168 bytes): thread_id, __align, MDException
// {exception_code, exception_flags, u64 exception_record, u64
// exception_address, number_parameters, __align, u64 information[15]},
// MDLocationDescriptor thread_context (at 160).
inline constexpr size_t kExceptionStreamSize = 168;
inline constexpr size_t kExceptionCode = 8;
inline constexpr size_t kExceptionFlags = 12;
inline constexpr size_t kExceptionAddress = 24;
inline constexpr size_t kExceptionNumberParameters = 32;
inline constexpr size_t kExceptionInformation = 40;
inline constexpr size_t kExceptionMaxParameters = 15;
inline constexpr size_t kExceptionContextLocation = 160;
// minidump_exception_linux.h: on Linux the code is the signal number, the
// flags are si_code, the address si_addr; this code means "no crash, a
// dump was asked for".
inline constexpr uint32_t kExceptionCodeDumpRequested = 0xffffffff;

// MDRawSystemInfo (56 bytes): u16 processor_architecture,
// processor_level, processor_revision, u8 number_of_processors,
// product_type, u32 major_version, minor_version, build_number,
// platform_id, csd_version_rva (MDString; Linux: `uname -srvmo`), u16
// suite_mask, reserved2, MDCPUInformation (24 bytes).
inline constexpr size_t kSystemInfoSize = 56;
inline constexpr size_t kSystemInfoNumberOfProcessors = 6;
inline constexpr size_t kSystemInfoMajorVersion = 8;
inline constexpr size_t kSystemInfoPlatformId = 20;
inline constexpr size_t kSystemInfoCsdVersionRva = 24;
inline constexpr size_t kSystemInfoCpu = 32;

// MDCPUArchitecture.
enum CpuArchitecture : uint16_t {
  kCpuX86 = 0,
  kCpuArm = 5,
  kCpuAmd64 = 9,
  kCpuArm64 = 12,
  kCpuArm64Old = 0x8003,  // Breakpad's own value before Windows had one
  kCpuUnknown = 0xffff,
};

// MDOSPlatform.
inline constexpr uint32_t kPlatformLinux = 0x8201;
inline constexpr uint32_t kPlatformAndroid = 0x8203;

// MDRawMiscInfo: size_of_info, flags1, process_id (valid with flags1 bit
// MD_MISCINFO_FLAGS1_PROCESS_ID), process_create_time, user, kernel time.
inline constexpr size_t kMiscInfoSize = 24;  // MD_MISCINFO_SIZE
inline constexpr uint32_t kMiscInfoProcessId = 0x1;

// MDRawDebug64 (40 bytes, natural alignment): version, map (RVA of
// MDRawLinkMap64[dso_count]), dso_count, pad, u64 brk, u64 ldbase, u64
// dynamic. MDRawLinkMap64 (24 bytes): u64 addr, name (RVA of MDString),
// pad, u64 ld. MDRawDebug32 (24): version, map, dso_count, brk, ldbase,
// dynamic; MDRawLinkMap32 (12): addr, name, ld.
inline constexpr size_t kDebug64Size = 40;
inline constexpr size_t kLinkMap64Size = 24;
inline constexpr size_t kDebug32Size = 24;
inline constexpr size_t kLinkMap32Size = 12;

}  // namespace unwindd::proc::minidump

#endif  // UNWINDD_PROC_MINIDUMP_FORMAT_H_
