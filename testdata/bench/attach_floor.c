// The floor of a whole `unwind pid` command: a static C program that does
// only what any out-of-process unwinder of every thread must do, and no
// unwinding. It lists the threads, seizes and interrupts each (all
// interrupts sent before the first wait), waits for their stops, reads
// each one's registers and 512 bytes at its stack pointer, reads the
// process's maps once, and detaches. compare.sh times it beside `unwind
// pid` and `eu-stack -p` on the same process: what `unwind pid` takes
// above it is our own start-up and work, and a ratio to eu-stack can
// never exceed eu-stack's time over this one.
//
//   attach_floor PID
//
// Exit status 0 when every thread was read, 1 otherwise.
#define _GNU_SOURCE  // process_vm_readv
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_THREADS 256

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: attach_floor PID\n");
    return 2;
  }
  const pid_t pid = (pid_t)atoi(argv[1]);
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/task", pid);
  DIR* dir = opendir(path);
  if (dir == NULL) {
    perror(path);
    return 1;
  }
  pid_t tids[MAX_THREADS];
  int n = 0;
  for (struct dirent* e; (e = readdir(dir)) != NULL && n < MAX_THREADS;) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids[n++] = (pid_t)atoi(e->d_name);
  }
  closedir(dir);
  int seized = 0;
  for (; seized < n; ++seized) {
    if (ptrace(PTRACE_SEIZE, tids[seized], 0, 0) != 0 ||
        ptrace(PTRACE_INTERRUPT, tids[seized], 0, 0) != 0) {
      perror("PTRACE_SEIZE");
      break;
    }
  }
  int ok = seized == n;
  for (int i = 0; i < seized; ++i) {
    int status;
    while (waitpid(tids[i], &status, __WALL) < 0 && errno == EINTR) {
    }
  }
  static char stack[512];
  for (int i = 0; ok && i < n; ++i) {
    struct user_regs_struct regs;
    struct iovec regs_iov = {&regs, sizeof(regs)};
    if (ptrace(PTRACE_GETREGSET, tids[i], (void*)NT_PRSTATUS, &regs_iov) != 0) {
      perror("PTRACE_GETREGSET");
      ok = 0;
      break;
    }
    struct iovec local = {stack, sizeof(stack)};
    struct iovec remote = {(void*)regs.rsp, sizeof(stack)};
    if (process_vm_readv(pid, &local, 1, &remote, 1, 0) <= 0) ok = 0;
  }
  snprintf(path, sizeof(path), "/proc/%d/maps", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  static char maps[64 << 10];
  if (fd < 0) ok = 0;
  while (fd >= 0 && read(fd, maps, sizeof(maps)) > 0) {
  }
  if (fd >= 0) close(fd);
  for (int i = 0; i < seized; ++i) ptrace(PTRACE_DETACH, tids[i], 0, 0);
  return ok ? 0 : 1;
}
