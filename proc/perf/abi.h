// The perf.data on-disk ABI: record types, sample_type / read_format bits,
// perf_event_attr offsets and the feature-section ids, as numbers taken
// from the kernel's include/uapi/linux/perf_event.h and perf's
// tools/perf/util/{event.h,header.h} (perf 6.1; later additions noted).
// Plain constants, so that the parsers and the test writer agree on one
// table.
//
//   if (attr.sample_type & kSampleStackUser) ...
#ifndef UNWINDD_PROC_PERF_ABI_H_
#define UNWINDD_PROC_PERF_ABI_H_

#include <cstdint>

namespace unwindd::proc::perf {

// --- File and pipe headers (tools/perf/util/header.h) ---
// "PERFILE2" read as a little-endian u64. Written by a big-endian host, the
// same bytes read as kMagicSwapped. perf's older "PERFFILE" (v1) is not
// supported.
inline constexpr uint64_t kMagic = 0x32454c4946524550ULL;
inline constexpr uint64_t kMagicSwapped = 0x50455246494c4532ULL;
inline constexpr uint64_t kMagicV1 = 0x454c494646524550ULL;  // "PERFFILE"
// struct perf_file_header: magic, size, attr_size, attrs{offset,size},
// data{offset,size}, event_types{offset,size}, adds_features[256 bits].
inline constexpr uint64_t kFileHeaderSize = 104;
// struct perf_pipe_file_header: magic, size.
inline constexpr uint64_t kPipeHeaderSize = 16;
inline constexpr int kFeatureBits = 256;

// --- perf_event_attr (include/uapi/linux/perf_event.h) ---
inline constexpr uint32_t kAttrSizeVer0 = 64;   // first published struct
inline constexpr uint32_t kAttrSizeVer1 = 72;   // + config2
inline constexpr uint32_t kAttrSizeVer2 = 80;   // + branch_sample_type
inline constexpr uint32_t kAttrSizeVer3 = 96;   // + regs_user, stack_user, clockid
inline constexpr uint32_t kAttrSizeVer4 = 104;  // + sample_regs_intr
inline constexpr uint32_t kAttrSizeVer5 = 112;  // + aux_watermark, max_stack
inline constexpr uint32_t kAttrSizeVer6 = 120;  // + aux_sample_size
inline constexpr uint32_t kAttrSizeVer7 = 128;  // + sig_data
inline constexpr uint32_t kAttrSizeVer8 = 136;  // + config3
// Byte offsets of the fields we read.
inline constexpr int kAttrOffType = 0;
inline constexpr int kAttrOffSize = 4;
inline constexpr int kAttrOffConfig = 8;
inline constexpr int kAttrOffSamplePeriod = 16;
inline constexpr int kAttrOffSampleType = 24;
inline constexpr int kAttrOffReadFormat = 32;
inline constexpr int kAttrOffFlags = 40;
inline constexpr int kAttrOffBranchSampleType = 72;  // VER2
inline constexpr int kAttrOffSampleRegsUser = 80;    // VER3
inline constexpr int kAttrOffSampleStackUser = 88;   // VER3 (u32)
inline constexpr int kAttrOffClockid = 92;           // VER3 (s32)
inline constexpr int kAttrOffSampleRegsIntr = 96;    // VER4

// Bits of the flags word (the bitfield after read_format).
inline constexpr uint64_t kAttrFlagFreq = 1ULL << 10;
inline constexpr uint64_t kAttrFlagSampleIdAll = 1ULL << 18;
inline constexpr uint64_t kAttrFlagMmap2 = 1ULL << 23;
inline constexpr uint64_t kAttrFlagCommExec = 1ULL << 24;
inline constexpr uint64_t kAttrFlagUseClockid = 1ULL << 25;
inline constexpr uint64_t kAttrFlagBuildId = 1ULL << 34;

// enum perf_type_id
inline constexpr uint32_t kTypeHardware = 0;
inline constexpr uint32_t kTypeSoftware = 1;

// enum perf_event_sample_format
inline constexpr uint64_t kSampleIp = 1ULL << 0;
inline constexpr uint64_t kSampleTid = 1ULL << 1;
inline constexpr uint64_t kSampleTime = 1ULL << 2;
inline constexpr uint64_t kSampleAddr = 1ULL << 3;
inline constexpr uint64_t kSampleRead = 1ULL << 4;
inline constexpr uint64_t kSampleCallchain = 1ULL << 5;
inline constexpr uint64_t kSampleId = 1ULL << 6;
inline constexpr uint64_t kSampleCpu = 1ULL << 7;
inline constexpr uint64_t kSamplePeriod = 1ULL << 8;
inline constexpr uint64_t kSampleStreamId = 1ULL << 9;
inline constexpr uint64_t kSampleRaw = 1ULL << 10;
inline constexpr uint64_t kSampleBranchStack = 1ULL << 11;
inline constexpr uint64_t kSampleRegsUser = 1ULL << 12;
inline constexpr uint64_t kSampleStackUser = 1ULL << 13;
inline constexpr uint64_t kSampleWeight = 1ULL << 14;
inline constexpr uint64_t kSampleDataSrc = 1ULL << 15;
inline constexpr uint64_t kSampleIdentifier = 1ULL << 16;
inline constexpr uint64_t kSampleTransaction = 1ULL << 17;
inline constexpr uint64_t kSampleRegsIntr = 1ULL << 18;
inline constexpr uint64_t kSamplePhysAddr = 1ULL << 19;
inline constexpr uint64_t kSampleAux = 1ULL << 20;
inline constexpr uint64_t kSampleCgroup = 1ULL << 21;
inline constexpr uint64_t kSampleDataPageSize = 1ULL << 22;
inline constexpr uint64_t kSampleCodePageSize = 1ULL << 23;
inline constexpr uint64_t kSampleWeightStruct = 1ULL << 24;

// enum perf_event_read_format
inline constexpr uint64_t kReadTotalTimeEnabled = 1ULL << 0;
inline constexpr uint64_t kReadTotalTimeRunning = 1ULL << 1;
inline constexpr uint64_t kReadId = 1ULL << 2;
inline constexpr uint64_t kReadGroup = 1ULL << 3;
inline constexpr uint64_t kReadLost = 1ULL << 4;

// enum perf_branch_sample_type: the sample has hw_idx after nr; (6.8+)
// one u64 of counters per branch entry after the entries.
inline constexpr uint64_t kBranchHwIndex = 1ULL << 17;
inline constexpr uint64_t kBranchCounters = 1ULL << 19;
inline constexpr uint64_t kBranchEntrySize = 24;  // struct perf_branch_entry

// enum perf_sample_regs_abi
inline constexpr uint64_t kRegsAbiNone = 0;
inline constexpr uint64_t kRegsAbi32 = 1;
inline constexpr uint64_t kRegsAbi64 = 2;

// enum perf_callchain_context: markers inside PERF_SAMPLE_CALLCHAIN, each
// saying whose addresses follow.
inline constexpr uint64_t kContextHv = static_cast<uint64_t>(-32);
inline constexpr uint64_t kContextKernel = static_cast<uint64_t>(-128);
inline constexpr uint64_t kContextUser = static_cast<uint64_t>(-512);
inline constexpr uint64_t kContextGuest = static_cast<uint64_t>(-2048);
inline constexpr uint64_t kContextGuestKernel = static_cast<uint64_t>(-2176);
inline constexpr uint64_t kContextGuestUser = static_cast<uint64_t>(-2560);
inline constexpr uint64_t kContextMax = static_cast<uint64_t>(-4095);

// --- perf_event_header.misc ---
inline constexpr uint16_t kMiscCpumodeMask = 7;
inline constexpr uint16_t kMiscKernel = 1;
inline constexpr uint16_t kMiscUser = 2;
inline constexpr uint16_t kMiscHypervisor = 3;
inline constexpr uint16_t kMiscGuestKernel = 4;
inline constexpr uint16_t kMiscGuestUser = 5;
inline constexpr uint16_t kMiscMmapData = 1 << 13;   // MMAP of a data mapping
inline constexpr uint16_t kMiscCommExec = 1 << 13;   // COMM caused by exec
inline constexpr uint16_t kMiscMmapBuildId = 1 << 14;  // MMAP2 carries a build-id
// perf's build_id_event: the build-id's length is in its size byte.
inline constexpr uint16_t kMiscBuildIdSize = 1 << 15;

// --- Record types: enum perf_event_type (kernel) ---
inline constexpr uint32_t kRecordMmap = 1;
inline constexpr uint32_t kRecordLost = 2;
inline constexpr uint32_t kRecordComm = 3;
inline constexpr uint32_t kRecordExit = 4;
inline constexpr uint32_t kRecordThrottle = 5;
inline constexpr uint32_t kRecordUnthrottle = 6;
inline constexpr uint32_t kRecordFork = 7;
inline constexpr uint32_t kRecordRead = 8;
inline constexpr uint32_t kRecordSample = 9;
inline constexpr uint32_t kRecordMmap2 = 10;
inline constexpr uint32_t kRecordAux = 11;
inline constexpr uint32_t kRecordItraceStart = 12;
inline constexpr uint32_t kRecordLostSamples = 13;
inline constexpr uint32_t kRecordSwitch = 14;
inline constexpr uint32_t kRecordSwitchCpuWide = 15;
inline constexpr uint32_t kRecordNamespaces = 16;
inline constexpr uint32_t kRecordKsymbol = 17;
inline constexpr uint32_t kRecordBpfEvent = 18;
inline constexpr uint32_t kRecordCgroup = 19;
inline constexpr uint32_t kRecordTextPoke = 20;
inline constexpr uint32_t kRecordAuxOutputHwId = 21;

// --- Record types perf itself writes: enum perf_user_event_type ---
inline constexpr uint32_t kRecordUserTypeStart = 64;
inline constexpr uint32_t kRecordHeaderAttr = 64;
inline constexpr uint32_t kRecordHeaderEventType = 65;  // deprecated
inline constexpr uint32_t kRecordHeaderTracingData = 66;
inline constexpr uint32_t kRecordHeaderBuildId = 67;
inline constexpr uint32_t kRecordFinishedRound = 68;
inline constexpr uint32_t kRecordIdIndex = 69;
inline constexpr uint32_t kRecordAuxtraceInfo = 70;
inline constexpr uint32_t kRecordAuxtrace = 71;
inline constexpr uint32_t kRecordAuxtraceError = 72;
inline constexpr uint32_t kRecordThreadMap = 73;
inline constexpr uint32_t kRecordCpuMap = 74;
inline constexpr uint32_t kRecordStatConfig = 75;
inline constexpr uint32_t kRecordStat = 76;
inline constexpr uint32_t kRecordStatRound = 77;
inline constexpr uint32_t kRecordEventUpdate = 78;
inline constexpr uint32_t kRecordTimeConv = 79;
inline constexpr uint32_t kRecordHeaderFeature = 80;
inline constexpr uint32_t kRecordCompressed = 81;
inline constexpr uint32_t kRecordFinishedInit = 82;
inline constexpr uint32_t kRecordCompressed2 = 83;

// PERF_RECORD_EVENT_UPDATE's types (tools/lib/perf/include/perf/event.h:
// UNIT 0, SCALE 1, NAME 2, CPUS 3); only the name is read.
inline constexpr uint64_t kEventUpdateName = 2;

// --- Feature sections: enum HEADER_* in tools/perf/util/header.h ---
inline constexpr int kFeatTracingData = 1;
inline constexpr int kFeatBuildId = 2;
inline constexpr int kFeatHostname = 3;
inline constexpr int kFeatOsRelease = 4;
inline constexpr int kFeatVersion = 5;
inline constexpr int kFeatArch = 6;
inline constexpr int kFeatNrCpus = 7;
inline constexpr int kFeatCpuDesc = 8;
inline constexpr int kFeatCpuId = 9;
inline constexpr int kFeatTotalMem = 10;
inline constexpr int kFeatCmdline = 11;
inline constexpr int kFeatEventDesc = 12;

// perf's build_id_event: header, pid, build_id[24] (20 bytes + size byte +
// padding), then the file name.
inline constexpr int kBuildIdEventFixedSize = 8 + 4 + 24;
inline constexpr int kBuildIdMaxBytes = 20;

}  // namespace unwindd::proc::perf

#endif  // UNWINDD_PROC_PERF_ABI_H_
