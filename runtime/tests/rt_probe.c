/* rt_probe.c: a C host that exercises the runtime's C API from the command
 * line, for the end-to-end tests (which link it with a kernels.o from
 * `fatlink device-link` and run it with or without a (fake) driver).
 *
 *   rt_probe list                     modules, images, kernels
 *   rt_probe manifest                 every kernel's manifest
 *   rt_probe get NAME                 look a kernel up (loads its module)
 *   rt_probe launch NAME SIZE...      launch with arguments of these sizes
 *                                     (PROBE_BLOCK: threads, PROBE_GRID:
 *                                     blocks, PROBE_SHARED: bytes of
 *                                     dynamic shared memory,
 *                                     PROBE_COOPERATIVE: cooperatively)
 *   rt_probe vec_add N                full round trip through vec_add
 *   rt_probe device N                 set device N and print it
 *   rt_probe select CC DRIVER         the image chosen for each module
 *   rt_probe streams                  vec_add on a stream between two
 *                                     events; then each stream and event
 *                                     call's refusals
 *   rt_probe threads N                N threads look up and launch vec_add
 *                                     at once (the module loads once)
 *   rt_probe dlclose LIB NAME         dlopen LIB, look NAME up, dlclose LIB,
 *                                     then use the stale handle
 *
 * Prints "status NAME: message" for every failure and exits 1. */
#include "fatlink/runtime.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed(fatlink_rt_status S) {
  printf("status %s: %s\n", fatlink_rt_status_name(S), fatlink_rt_last_error());
  return 1;
}

static int list(void) {
  uint32_t N = fatlink_rt_module_count();
  printf("%u module%s\n", N, N == 1 ? "" : "s");
  for (uint32_t M = 0; M < N; ++M) {
    fatlink_rt_module_info Info;
    fatlink_rt_status S = fatlink_rt_get_module_info(M, &Info);
    const char *Base = strrchr(Info.origin, '/');
    printf("module %u: %s, %llu-byte fatbin\n", M, Base ? Base + 1 : Info.origin,
           (unsigned long long)Info.fatbin_size);
    if (S != FATLINK_RT_SUCCESS)
      return failed(S);
    for (uint32_t I = 0; I < Info.num_images; ++I) {
      fatlink_rt_image Img;
      char Buf[64];
      if ((S = fatlink_rt_module_image(M, I, &Img)) != FATLINK_RT_SUCCESS)
        return failed(S);
      printf("  image %s%s\n", fatlink_rt_image_string(&Img, Buf, sizeof(Buf)),
             Img.compression == FATLINK_RT_COMPRESSION_ZSTD ? " zstd" : "");
    }
    for (uint32_t K = 0; K < Info.num_kernels; ++K) {
      fatlink_rt_kernel_info KI;
      if ((S = fatlink_rt_module_kernel(M, K, &KI)) != FATLINK_RT_SUCCESS)
        return failed(S);
      printf("  kernel %s(", KI.name);
      for (uint32_t P = 0; P < KI.num_params; ++P)
        printf("%s%u", P ? ", " : "", KI.param_sizes[P]);
      printf(")\n");
    }
  }
  return 0;
}

static const char *languageName(fatlink_rt_language L) {
  switch (L) {
  case FATLINK_RT_LANGUAGE_RUST: return "Rust";
  case FATLINK_RT_LANGUAGE_CUDA: return "CUDA C++";
  case FATLINK_RT_LANGUAGE_C: return "C";
  default: return "unknown";
  }
}

static int manifest(void) {
  for (uint32_t M = 0; M < fatlink_rt_module_count(); ++M) {
    fatlink_rt_module_info Info;
    fatlink_rt_status S = fatlink_rt_get_module_info(M, &Info);
    if (S != FATLINK_RT_SUCCESS)
      return failed(S);
    for (uint32_t K = 0; K < Info.num_kernels; ++K) {
      fatlink_rt_kernel_info KI;
      fatlink_rt_kernel_manifest Man;
      if ((S = fatlink_rt_module_kernel(M, K, &KI)) != FATLINK_RT_SUCCESS ||
          (S = fatlink_rt_module_kernel_manifest(M, K, &Man)) !=
              FATLINK_RT_SUCCESS)
        return failed(S);
      printf("kernel %s: %s, origin \"%s\", %u params", KI.name,
             languageName(Man.language), Man.origin, Man.num_params);
      if (Man.max_threads[0])
        printf(", max threads %u,%u,%u", Man.max_threads[0],
               Man.max_threads[1], Man.max_threads[2]);
      if (Man.req_threads[0])
        printf(", threads %u,%u,%u", Man.req_threads[0], Man.req_threads[1],
               Man.req_threads[2]);
      if (Man.min_blocks)
        printf(", min blocks %u", Man.min_blocks);
      if (Man.cluster[0])
        printf(", cluster %u,%u,%u", Man.cluster[0], Man.cluster[1],
               Man.cluster[2]);
      printf("\n");
      for (uint32_t P = 0; P < Man.num_params; ++P) {
        fatlink_rt_param Param;
        char Buf[256];
        if ((S = fatlink_rt_module_kernel_param(M, K, P, &Param)) !=
            FATLINK_RT_SUCCESS)
          return failed(S);
        printf("  %u: %s\n", P, fatlink_rt_param_string(&Param, Buf,
                                                          sizeof(Buf)));
      }
      /* One past the end is refused. */
      fatlink_rt_param Past;
      if (fatlink_rt_module_kernel_param(M, K, Man.num_params, &Past) !=
          FATLINK_RT_ERROR_INVALID_VALUE)
        return printf("parameter %u of %s was not refused\n", Man.num_params,
                      KI.name), 1;
    }
  }
  return 0;
}

static void *threadMain(void *Arg) {
  (void)Arg;
  fatlink_rt_kernel K;
  fatlink_rt_status S = fatlink_rt_get_kernel("vec_add", &K);
  if (S == FATLINK_RT_SUCCESS) {
    uint64_t Zero = 0;
    void *Args[] = {&Zero, &Zero, &Zero};
    size_t Sizes[] = {8, 8, 8};
    fatlink_rt_dim3 One = {1, 1, 1};
    S = fatlink_rt_launch(K, One, One, 0, NULL, Args, Sizes, 3);
  }
  return (void *)(intptr_t)S;
}

int main(int Argc, char **Argv) {
  if (Argc < 2)
    return list();
  const char *Cmd = Argv[1];
  fatlink_rt_status S;
  if (!strcmp(Cmd, "list"))
    return list();
  if (!strcmp(Cmd, "manifest"))
    return manifest();
  if (!strcmp(Cmd, "init"))
    return (S = fatlink_rt_init()) ? failed(S) : (puts("ok"), 0);
  if (!strcmp(Cmd, "device") && Argc > 2) {
    if ((S = fatlink_rt_set_device(atoi(Argv[2]))) != FATLINK_RT_SUCCESS)
      return failed(S);
    fatlink_rt_device_info D;
    if ((S = fatlink_rt_get_device_info(atoi(Argv[2]), &D)))
      return failed(S);
    printf("device %s sm_%d%d driver %d\n", D.name, D.cc_major, D.cc_minor,
           D.driver_version);
    return 0;
  }
  if (!strcmp(Cmd, "get") && Argc > 2) {
    fatlink_rt_kernel K;
    if ((S = fatlink_rt_get_kernel(Argv[2], &K)) != FATLINK_RT_SUCCESS)
      return failed(S);
    puts("ok");
    return 0;
  }
  if (!strcmp(Cmd, "launch") && Argc > 2) {
    fatlink_rt_kernel K;
    if ((S = fatlink_rt_get_kernel(Argv[2], &K)) != FATLINK_RT_SUCCESS)
      return failed(S);
    uint32_t N = (uint32_t)(Argc - 3);
    size_t Sizes[16];
    void *Args[16];
    uint64_t Storage[16] = {0};
    for (uint32_t I = 0; I < N && I < 16; ++I) {
      Sizes[I] = (size_t)atoi(Argv[3 + I]);
      Args[I] = &Storage[I];
    }
    fatlink_rt_dim3 Grid = {1, 1, 1}, Block = {32, 1, 1};
    const char *B = getenv("PROBE_BLOCK");
    if (B)
      Block.x = (uint32_t)atoi(B);
    const char *Shared = getenv("PROBE_SHARED");
    uint32_t SharedBytes = Shared ? (uint32_t)strtoul(Shared, NULL, 10) : 0;
    const char *Grids = getenv("PROBE_GRID");
    if (Grids)
      Grid.x = (uint32_t)atoi(Grids);
    if ((S = (getenv("PROBE_COOPERATIVE") ? fatlink_rt_launch_cooperative
                                          : fatlink_rt_launch)(
             K, Grid, Block, SharedBytes, NULL, Args, Sizes, N)))
      return failed(S);
    puts("ok");
    return 0;
  }
  if (!strcmp(Cmd, "vec_add") && Argc > 2) {
    int N = atoi(Argv[2]);
    float *A = malloc(sizeof(float) * N), *B = malloc(sizeof(float) * N),
          *C = malloc(sizeof(float) * N);
    for (int I = 0; I < N; ++I) {
      A[I] = (float)I;
      B[I] = 0.5f * (float)I;
    }
    fatlink_rt_kernel K;
    fatlink_rt_devptr DA = 0, DB = 0, DC = 0;
    size_t Bytes = sizeof(float) * (size_t)N;
    int Rc = 0;
    if ((S = fatlink_rt_get_kernel("vec_add", &K)) ||
        (S = fatlink_rt_malloc(&DA, Bytes)) ||
        (S = fatlink_rt_malloc(&DB, Bytes)) ||
        (S = fatlink_rt_malloc(&DC, Bytes)) ||
        (S = fatlink_rt_memcpy_htod(DA, A, Bytes)) ||
        (S = fatlink_rt_memcpy_htod(DB, B, Bytes)) ||
        (S = fatlink_rt_memset(DC, 0, Bytes))) {
      Rc = failed(S);
      goto done;
    }
    void *Args[] = {&DA, &DB, &DC};
    size_t Sizes[] = {8, 8, 8};
    fatlink_rt_dim3 Grid = {(uint32_t)(N / 32), 1, 1}, Block = {32, 1, 1};
    if ((S = fatlink_rt_launch(K, Grid, Block, 0, NULL, Args, Sizes, 3)) ||
        (S = fatlink_rt_synchronize()) ||
        (S = fatlink_rt_memcpy_dtoh(C, DC, Bytes))) {
      Rc = failed(S);
      goto done;
    }
    for (int I = 0; I < N && !Rc; ++I)
      if (C[I] != A[I] + B[I]) {
        printf("mismatch at %d: %g != %g\n", I, C[I], A[I] + B[I]);
        Rc = 1;
      }
    if (!Rc)
      printf("vec_add ok (%d elements)\n", N);
  done:
    fatlink_rt_free(DA);
    fatlink_rt_free(DB);
    fatlink_rt_free(DC);
    free(A);
    free(B);
    free(C);
    return Rc;
  }
  if (!strcmp(Cmd, "streams")) {
    /* Queue vec_add on a new stream between two events, wait, time it. */
    enum { N = 64 };
    float A[N], B[N], C[N];
    for (int I = 0; I < N; ++I) {
      A[I] = (float)I;
      B[I] = 2.0f;
    }
    fatlink_rt_kernel K;
    fatlink_rt_stream Stream;
    fatlink_rt_event Start, End, Unrecorded;
    fatlink_rt_devptr DA, DB, DC;
    float Ms = -1;
    if ((S = fatlink_rt_get_kernel("vec_add", &K)) ||
        (S = fatlink_rt_stream_create(&Stream)) ||
        (S = fatlink_rt_event_create(&Start)) ||
        (S = fatlink_rt_event_create(&End)) ||
        (S = fatlink_rt_event_create(&Unrecorded)) ||
        (S = fatlink_rt_malloc(&DA, sizeof(A))) ||
        (S = fatlink_rt_malloc(&DB, sizeof(B))) ||
        (S = fatlink_rt_malloc(&DC, sizeof(C))) ||
        (S = fatlink_rt_memcpy_htod(DA, A, sizeof(A))) ||
        (S = fatlink_rt_memcpy_htod(DB, B, sizeof(B))))
      return failed(S);
    void *Args[] = {&DA, &DB, &DC};
    size_t Sizes[] = {8, 8, 8};
    fatlink_rt_dim3 Grid = {2, 1, 1}, Block = {N / 2, 1, 1};
    if ((S = fatlink_rt_event_record(Start, Stream)) ||
        (S = fatlink_rt_launch(K, Grid, Block, 0, Stream, Args, Sizes, 3)) ||
        (S = fatlink_rt_event_record(End, Stream)) ||
        (S = fatlink_rt_stream_wait_event(NULL, End)) ||
        (S = fatlink_rt_event_synchronize(End)) ||
        (S = fatlink_rt_stream_synchronize(Stream)) ||
        (S = fatlink_rt_event_elapsed_ms(Start, End, &Ms)) ||
        (S = fatlink_rt_memcpy_dtoh(C, DC, sizeof(C))))
      return failed(S);
    int Bad = 0;
    for (int I = 0; I < N; ++I)
      Bad += C[I] != A[I] + B[I];
    printf("vec_add on a stream: %d wrong, %.1f ms\n", Bad, Ms);
    /* Refusals: each prints its status and message. */
    if ((S = fatlink_rt_event_elapsed_ms(Start, Unrecorded, &Ms)))
      failed(S);
    if ((S = fatlink_rt_stream_destroy(NULL)))
      failed(S);
    if ((S = fatlink_rt_stream_create(NULL)))
      failed(S);
    if ((S = fatlink_rt_event_record(NULL, Stream)))
      failed(S);
    if ((S = fatlink_rt_event_destroy(Start)) ||
        (S = fatlink_rt_event_destroy(End)) ||
        (S = fatlink_rt_event_destroy(Unrecorded)) ||
        (S = fatlink_rt_stream_destroy(Stream)))
      return failed(S);
    fatlink_rt_free(DA);
    fatlink_rt_free(DB);
    fatlink_rt_free(DC);
    return Bad != 0;
  }
  if (!strcmp(Cmd, "threads") && Argc > 2) {
    int N = atoi(Argv[2]);
    pthread_t T[64];
    for (int I = 0; I < N && I < 64; ++I)
      pthread_create(&T[I], NULL, threadMain, NULL);
    int Failed = 0;
    for (int I = 0; I < N && I < 64; ++I) {
      void *R;
      pthread_join(T[I], &R);
      Failed += R != NULL;
    }
    printf("%d of %d threads failed\n", Failed, N);
    return Failed != 0;
  }
  if (!strcmp(Cmd, "dlclose") && Argc > 3) {
    /* The library's constructor registers its modules with this program's
     * registry (linked with -rdynamic); its destructor unregisters them. */
    void *Lib = dlopen(Argv[2], RTLD_NOW);
    if (!Lib) {
      printf("dlopen: %s\n", dlerror());
      return 1;
    }
    printf("%u modules while loaded\n", fatlink_rt_module_count());
    fatlink_rt_kernel K;
    if ((S = fatlink_rt_get_kernel(Argv[3], &K)) != FATLINK_RT_SUCCESS)
      return failed(S);
    dlclose(Lib);
    printf("%u module%s after dlclose\n", fatlink_rt_module_count(),
           fatlink_rt_module_count() == 1 ? "" : "s");
    fatlink_rt_kernel_info Info;
    if ((S = fatlink_rt_kernel_get_info(K, &Info)) == FATLINK_RT_SUCCESS) {
      puts("kernel_get_info on a stale handle succeeded");
      return 1;
    }
    printf("info: ");
    failed(S);
    uint64_t Zero = 0;
    void *Args[] = {&Zero, &Zero, &Zero};
    size_t Sizes[] = {8, 8, 8};
    fatlink_rt_dim3 One = {1, 1, 1};
    S = fatlink_rt_launch(K, One, One, 0, NULL, Args, Sizes, 3);
    printf("launch: ");
    return S ? failed(S) : (puts("ok"), 0);
  }
  if (!strcmp(Cmd, "select") && Argc > 3) {
    fatlink_rt_device_desc D = {atoi(Argv[2]) / 10, atoi(Argv[2]) % 10,
                                atoi(Argv[3])};
    for (uint32_t M = 0; M < fatlink_rt_module_count(); ++M) {
      fatlink_rt_image Img[32];
      uint32_t N = 0;
      while (N < 32 && fatlink_rt_module_image(M, N, &Img[N]) == 0)
        ++N;
      fatlink_rt_choice C;
      S = fatlink_rt_select_image(Img, N, &D, &C);
      printf("module %u: %s: %s\n", M, fatlink_rt_status_name(S), C.reason);
    }
    return 0;
  }
  fprintf(stderr,
          "usage: rt_probe [list|manifest|init|device N|get NAME|launch NAME "
          "SIZE...|vec_add N|select CC DRIVER|threads N|dlclose LIB NAME]\n");
  return 2;
}
