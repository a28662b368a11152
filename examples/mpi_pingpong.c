// SPDX-License-Identifier: BSD-3-Clause
//
// mpi_pingpong: an ordinary MPI program, the kind HPC users run, for Open MPI
// over UCX over kbv's libibverbs (README "Running MPI and UCX on kbv"):
//
//   kbv-run mpirun -np 2 --allow-run-as-root --oversubscribe
//       --mca pml ucx --mca btl ^vader,tcp,openib -x UCX_TLS=rc_v,self
//       build/examples/mpi_pingpong
//   (one command line)
//
// 1. Ping-pong between ranks 0 and 1 over a size sweep (8 B .. max, powers
//    of two): one-way latency = round trip / 2 (the average over the timed
//    round trips, and their median, which a loaded machine's preemptions
//    move less), and bandwidth from the average.
// 2. MPI_Allreduce (MPI_SUM of MPI_INT over every rank) and 3. MPI_Alltoall
//    (a block from every rank to every rank) at a few sizes.
// Every byte received is checked against the pattern its sender wrote (the
// pattern changes with size, iteration, sender and receiver, so a stale or
// misplaced buffer fails). A mismatch prints where and aborts (exit != 0).
// Rank 0 prints the tables and, last, "mpi_pingpong: all data checked".
//
// Options: -n ITERS (ping-pong iterations at 8 B, fewer for larger sizes;
// default 1000), -m MAX (largest ping-pong size in bytes, default 1048576),
// -w WARMUP (untimed round trips per size, default 10).
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_rank, g_size;

// The byte at `i` of a message identified by (tag, from, to).
static uint8_t pattern(uint32_t tag, int from, int to, size_t i) {
  uint32_t x = tag * 2654435761u ^ (uint32_t)from * 40503u ^ (uint32_t)to * 97u ^ (uint32_t)i;
  x ^= (uint32_t)(i >> 8) * 131u;
  return (uint8_t)(x ^ (x >> 8) ^ (x >> 16));
}

static void fill(uint8_t* buf, size_t n, uint32_t tag, int from, int to) {
  for (size_t i = 0; i < n; ++i) buf[i] = pattern(tag, from, to, i);
}

static void check(const uint8_t* buf, size_t n, uint32_t tag, int from, int to, const char* what) {
  for (size_t i = 0; i < n; ++i) {
    const uint8_t want = pattern(tag, from, to, i);
    if (buf[i] != want) {
      fprintf(stderr,
              "mpi_pingpong: rank %d: %s: byte %zu of %zu from rank %d is 0x%02x, expected "
              "0x%02x\n",
              g_rank, what, i, n, from, buf[i], want);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
}

static void* xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "mpi_pingpong: rank %d: out of memory (%zu bytes)\n", g_rank, n);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  return p;
}

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

// Iterations at `size`: fewer for large messages, at least 5.
static int iters_for(int base, size_t size) {
  int n = base;
  for (size_t s = 8 * 1024; s < size && n > 5; s *= 2) n /= 2;
  return n < 5 ? 5 : n;
}

// Ranks 0 and 1 bounce messages; the others wait at the barrier after.
static void pingpong(int base_iters, int warmup, size_t max_size) {
  uint8_t* sbuf = xmalloc(max_size);
  uint8_t* rbuf = xmalloc(max_size);
  if (g_rank == 0) {
    printf("# ping-pong rank 0 <-> rank 1\n");
    printf("%10s %8s %14s %14s %12s\n", "bytes", "iters", "latency[us]", "median[us]", "bw[MB/s]");
    fflush(stdout);
  }
  uint32_t tag = 1;
  for (size_t size = 8; size <= max_size; size *= 2) {
    const int iters = iters_for(base_iters, size);
    double* rtt = xmalloc(sizeof(double) * (size_t)iters);
    double t0 = 0, t_it = 0;
    for (int it = -warmup; it < iters; ++it, ++tag) {
      if (it == 0) t0 = MPI_Wtime();
      if (it >= 0) t_it = MPI_Wtime();
      if (g_rank == 0) {
        fill(sbuf, size, tag, 0, 1);
        MPI_Send(sbuf, (int)size, MPI_BYTE, 1, (int)(tag & 0x7fff), MPI_COMM_WORLD);
        MPI_Recv(rbuf, (int)size, MPI_BYTE, 1, (int)(tag & 0x7fff), MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        if (it >= 0) rtt[it] = MPI_Wtime() - t_it;
        check(rbuf, size, tag, 1, 0, "ping-pong");
      } else if (g_rank == 1) {
        MPI_Recv(rbuf, (int)size, MPI_BYTE, 0, (int)(tag & 0x7fff), MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        check(rbuf, size, tag, 0, 1, "ping-pong");
        fill(sbuf, size, tag, 1, 0);
        MPI_Send(sbuf, (int)size, MPI_BYTE, 0, (int)(tag & 0x7fff), MPI_COMM_WORLD);
      }
    }
    const double dt = MPI_Wtime() - t0;
    if (g_rank == 0) {
      const double one_way_us = dt / iters / 2 * 1e6;
      qsort(rtt, (size_t)iters, sizeof(double), cmp_double);
      const double median_us = rtt[iters / 2] / 2 * 1e6;
      printf("%10zu %8d %14.2f %14.2f %12.2f\n", size, iters, one_way_us, median_us,
             size / one_way_us);
      fflush(stdout);
    }
    free(rtt);
  }
  free(sbuf);
  free(rbuf);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void allreduce(void) {
  static const int kCounts[] = {1, 1024, 65536};
  if (g_rank == 0) printf("# MPI_Allreduce (MPI_SUM, MPI_INT, %d ranks)\n", g_size);
  for (size_t k = 0; k < sizeof kCounts / sizeof kCounts[0]; ++k) {
    const int n = kCounts[k];
    int* in = xmalloc(sizeof(int) * (size_t)n);
    int* out = xmalloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; ++i) in[i] = (g_rank + 1) * 1000003 + i * (g_rank + 7);
    const double t0 = MPI_Wtime();
    MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    const double dt = MPI_Wtime() - t0;
    for (int i = 0; i < n; ++i) {
      long long want = 0;
      for (int r = 0; r < g_size; ++r)
        want += (long long)(r + 1) * 1000003 + (long long)i * (r + 7);
      if (out[i] != (int)want) {
        fprintf(stderr,
                "mpi_pingpong: rank %d: MPI_Allreduce element %d of %d is %d, expected %d\n",
                g_rank, i, n, out[i], (int)want);
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
    }
    if (g_rank == 0) printf("%10zu bytes %12.2f us  checked\n", sizeof(int) * (size_t)n, dt * 1e6);
    free(in);
    free(out);
  }
}

static void alltoall(void) {
  static const size_t kBlocks[] = {8, 4096, 65536};
  if (g_rank == 0) printf("# MPI_Alltoall (%d ranks)\n", g_size);
  for (size_t k = 0; k < sizeof kBlocks / sizeof kBlocks[0]; ++k) {
    const size_t blk = kBlocks[k];
    uint8_t* s = xmalloc(blk * (size_t)g_size);
    uint8_t* r = xmalloc(blk * (size_t)g_size);
    const uint32_t tag = 0x40000000u + (uint32_t)k;
    for (int to = 0; to < g_size; ++to) fill(s + blk * (size_t)to, blk, tag, g_rank, to);
    memset(r, 0, blk * (size_t)g_size);
    const double t0 = MPI_Wtime();
    MPI_Alltoall(s, (int)blk, MPI_BYTE, r, (int)blk, MPI_BYTE, MPI_COMM_WORLD);
    const double dt = MPI_Wtime() - t0;
    for (int from = 0; from < g_size; ++from)
      check(r + blk * (size_t)from, blk, tag, from, g_rank, "MPI_Alltoall");
    if (g_rank == 0) printf("%10zu bytes/peer %8.2f us  checked\n", blk, dt * 1e6);
    free(s);
    free(r);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  int iters = 1000, warmup = 10;
  long max_size = 1 << 20;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-n") && i + 1 < argc) {
      iters = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "-m") && i + 1 < argc) {
      max_size = atol(argv[++i]);
    } else if (!strcmp(argv[i], "-w") && i + 1 < argc) {
      warmup = atoi(argv[++i]);
    } else {
      if (g_rank == 0)
        fprintf(stderr, "usage: mpi_pingpong [-n ITERS] [-m MAX_BYTES] [-w WARMUP]\n");
      MPI_Finalize();
      return 2;
    }
  }
  if (iters < 1 || warmup < 0 || max_size < 8 || g_size < 2) {
    if (g_rank == 0)
      fprintf(stderr, "mpi_pingpong: needs 2 or more ranks, -n >= 1, -w >= 0, -m >= 8\n");
    MPI_Finalize();
    return 2;
  }
  if (g_rank == 0) printf("# mpi_pingpong: %d ranks\n", g_size);
  pingpong(iters, warmup, (size_t)max_size);
  allreduce();
  alltoall();
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) printf("mpi_pingpong: all data checked\n");
  MPI_Finalize();
  return 0;
}
