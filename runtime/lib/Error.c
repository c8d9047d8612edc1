/*===- runtime/lib/Error.c - Messages, status names and the log -----------===*\
 *
 * The runtime never prints an error: it stores a message per thread that
 * fatlink_rt_last_error() returns. The log (FATLINK_RT_LOG=1) is the only
 * output, on stderr, one line per event, prefixed "fatlink-rt: ".
\*===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L /* readlink, under -std=c11 */

#include "Internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MessageCapacity = 8192 };

static __thread char Message[MessageCapacity];
static __thread int LastCuda;

fatlink_rt_status flrt_vfail(fatlink_rt_status Status, const char *Fmt,
                             va_list Ap) {
  vsnprintf(Message, sizeof(Message), Fmt, Ap);
  return Status;
}

fatlink_rt_status flrt_fail(fatlink_rt_status Status, const char *Fmt, ...) {
  va_list Ap;
  va_start(Ap, Fmt);
  flrt_vfail(Status, Fmt, Ap);
  va_end(Ap);
  return Status;
}

fatlink_rt_status flrt_ok(void) {
  Message[0] = '\0';
  LastCuda = 0;
  return FATLINK_RT_SUCCESS;
}

void flrt_set_cuda_error(int Code) { LastCuda = Code; }

const char *fatlink_rt_last_error(void) { return Message; }

int fatlink_rt_last_cuda_error(void) { return LastCuda; }

const char *fatlink_rt_status_name(fatlink_rt_status Status) {
  switch (Status) {
  case FATLINK_RT_SUCCESS: return "FATLINK_RT_SUCCESS";
  case FATLINK_RT_ERROR_INVALID_VALUE: return "FATLINK_RT_ERROR_INVALID_VALUE";
  case FATLINK_RT_ERROR_NO_DRIVER: return "FATLINK_RT_ERROR_NO_DRIVER";
  case FATLINK_RT_ERROR_NO_DEVICE: return "FATLINK_RT_ERROR_NO_DEVICE";
  case FATLINK_RT_ERROR_DRIVER_TOO_OLD: return "FATLINK_RT_ERROR_DRIVER_TOO_OLD";
  case FATLINK_RT_ERROR_NO_IMAGE: return "FATLINK_RT_ERROR_NO_IMAGE";
  case FATLINK_RT_ERROR_KERNEL_NOT_FOUND: return "FATLINK_RT_ERROR_KERNEL_NOT_FOUND";
  case FATLINK_RT_ERROR_ARGUMENTS: return "FATLINK_RT_ERROR_ARGUMENTS";
  case FATLINK_RT_ERROR_BAD_MODULE: return "FATLINK_RT_ERROR_BAD_MODULE";
  case FATLINK_RT_ERROR_OUT_OF_MEMORY: return "FATLINK_RT_ERROR_OUT_OF_MEMORY";
  case FATLINK_RT_ERROR_CUDA: return "FATLINK_RT_ERROR_CUDA";
  }
  return "FATLINK_RT_ERROR_UNKNOWN";
}

int flrt_log_level(void) {
  const char *V = getenv("FATLINK_RT_LOG");
  if (!V || !*V)
    return -1;
  return strcmp(V, "0") == 0 ? 0 : 1;
}

static void vlog(const char *Prefix, const char *Fmt, va_list Ap) {
  char Line[4096];
  vsnprintf(Line, sizeof(Line), Fmt, Ap);
  /* One write per line, so lines of several threads do not interleave. */
  fprintf(stderr, "fatlink-rt: %s%s\n", Prefix, Line);
}

void flrt_log(const char *Fmt, ...) {
  if (flrt_log_level() != 1)
    return;
  va_list Ap;
  va_start(Ap, Fmt);
  vlog("", Fmt, Ap);
  va_end(Ap);
}

void flrt_warn(const char *Fmt, ...) {
  if (flrt_log_level() == 0)
    return;
  va_list Ap;
  va_start(Ap, Fmt);
  vlog("warning: ", Fmt, Ap);
  va_end(Ap);
}

void flrt_str_init(flrt_str *S) {
  S->data = S->inline_buf;
  S->len = 0;
  S->cap = sizeof(S->inline_buf);
  S->inline_buf[0] = '\0';
}

void flrt_str_addf(flrt_str *S, const char *Fmt, ...) {
  for (int Try = 0; Try < 2; ++Try) {
    va_list Ap;
    va_start(Ap, Fmt);
    int N = vsnprintf(S->data + S->len, S->cap - S->len, Fmt, Ap);
    va_end(Ap);
    if (N < 0)
      return;
    if ((size_t)N < S->cap - S->len) {
      S->len += (size_t)N;
      return;
    }
    if (Try == 1)
      break;
    size_t NewCap = S->cap * 2;
    while (NewCap - S->len <= (size_t)N)
      NewCap *= 2;
    char *New = S->data == S->inline_buf ? malloc(NewCap)
                                         : realloc(S->data, NewCap);
    if (!New)
      break;
    if (S->data == S->inline_buf)
      memcpy(New, S->inline_buf, S->len + 1);
    S->data = New;
    S->cap = NewCap;
  }
  /* Out of memory: keep the truncated text vsnprintf wrote. */
  S->len = strlen(S->data);
}

const char *flrt_str_get(const flrt_str *S) { return S->data; }

void flrt_str_free(flrt_str *S) {
  if (S->data != S->inline_buf)
    free(S->data);
  flrt_str_init(S);
}

/* fatlink cc writes the link's messages to "<output>.fatlink.log" beside
 * the file it linked (docs/cargo.md "Diagnostics"); the program's bytes do
 * not name it (they would hold a machine's path). Here: this program's own
 * path plus ".fatlink.log", or, for a program cargo copied out of deps/
 * (target/debug/app from target/debug/deps/app-<hash>), the newest
 * "deps/<name>-*.fatlink.log" beside it. */
void flrt_str_add_link_log(flrt_str *S) {
  char Exe[4096];
  ssize_t N = readlink("/proc/self/exe", Exe, sizeof(Exe) - 1);
  if (N <= 0)
    return;
  Exe[N] = '\0';
  char Path[4096 + 64];
  struct stat St;
  snprintf(Path, sizeof(Path), "%s.fatlink.log", Exe);
  if (stat(Path, &St) == 0 && S_ISREG(St.st_mode)) {
    flrt_str_addf(S, " (fatlink cc's link log: %s)", Path);
    return;
  }
  char *Slash = strrchr(Exe, '/');
  if (!Slash)
    return;
  *Slash = '\0';
  const char *Name = Slash + 1;
  char Deps[4096 + 8];
  snprintf(Deps, sizeof(Deps), "%s/deps", Exe);
  DIR *D = opendir(Deps);
  if (!D)
    return;
  size_t NameLen = strlen(Name);
  char Best[sizeof(Path)] = "";
  time_t BestTime = 0;
  for (struct dirent *E; (E = readdir(D));) {
    size_t Len = strlen(E->d_name);
    const char *Suffix = ".fatlink.log";
    size_t SuffixLen = strlen(Suffix);
    if (Len <= NameLen + 1 + SuffixLen ||
        strncmp(E->d_name, Name, NameLen) != 0 || E->d_name[NameLen] != '-' ||
        strcmp(E->d_name + Len - SuffixLen, Suffix) != 0)
      continue;
    snprintf(Path, sizeof(Path), "%s/%s", Deps, E->d_name);
    if (stat(Path, &St) == 0 && S_ISREG(St.st_mode) &&
        (!Best[0] || St.st_mtime > BestTime)) {
      snprintf(Best, sizeof(Best), "%s", Path);
      BestTime = St.st_mtime;
    }
  }
  closedir(D);
  if (Best[0])
    flrt_str_addf(S, " (fatlink cc's link log: %s)", Best);
}
