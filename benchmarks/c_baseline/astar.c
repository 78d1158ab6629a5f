/*
 * A plain one-thread C A* over bit-packed states, in the style of GPGOAP (64-bit bitfields, fixed node
 * lists, a trivially cheap heuristic), as a per-core yardstick for the Warp planner.
 *
 * It reads the encoded tables of one domain and a batch of queries from a binary file written by
 * benchmarks/plan_throughput.py (see write_c_input there), plans every query, and prints one line of JSON:
 * the plans found, the CPU seconds of the search loop alone, and a checksum of the plan costs. With a second
 * argument it also writes each query's plan cost there (float64, -1 where it found none), so that a caller can
 * time another planner on exactly the queries this one solves.
 *
 * Search: a binary heap ordered by (f, h, node), open addressing on the full state, the goal test when a node is
 * popped, stale heap entries skipped. Heuristic h = ceil(unmet goal conditions / e) * c_min (admissible:
 * every action fixes at most e conditions of the goal and costs at least c_min), as cheap as GPGOAP's
 * count of mismatched bits. Integers in the state (+= / -= effects, < <= > >= != conditions) are supported,
 * so the same domains run here and in the Warp planner. Build: cc -O2 -o astar astar.c
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXW 8

typedef struct { int32_t word, shift; uint64_t mask; int32_t op; uint64_t k; } Cond;
typedef struct { int32_t word, shift; uint64_t mask; int64_t delta; uint64_t hi; } Step;

static int W, A, G, N, MAXN;
static uint64_t *pre_mask, *pre_value, *eff_set, *eff_clear, *goal_mask, *goal_value;
static int32_t *pre_start, *step_start, *gint_start, *atom_start, *max_achieved;
static Cond *pre_ints, *goal_ints, *atoms;
static Step *steps;
static double *cost;
static uint64_t *q_states;
static int32_t *q_goals;

static void *read_block(FILE *f, size_t size, size_t count) {
    void *p = malloc(size * (count ? count : 1));
    if (count && fread(p, size, count, f) != count) { fprintf(stderr, "short input\n"); exit(2); }
    return p;
}

static int32_t read_i32(FILE *f) { int32_t v; if (fread(&v, 4, 1, f) != 1) exit(2); return v; }

static int holds(uint64_t v, int op, uint64_t k) {
    switch (op) {
    case 0: return v == k;
    case 1: return v != k;
    case 2: return v < k;
    case 3: return v <= k;
    case 4: return v > k;
    default: return v >= k;
    }
}

static int conds_hold(const uint64_t *s, const Cond *c, int from, int to) {
    for (int j = from; j < to; j++)
        if (!holds((s[c[j].word] >> c[j].shift) & c[j].mask, c[j].op, c[j].k)) return 0;
    return 1;
}

static int masks_hold(const uint64_t *s, const uint64_t *mask, const uint64_t *value) {
    for (int w = 0; w < W; w++)
        if ((s[w] & mask[w]) != value[w]) return 0;
    return 1;
}

/* --- per-search arrays, allocated once for MAXN nodes ------------------------------------------------------ */
static uint64_t *node_state;
static double *node_g, *node_h;
static int32_t *node_parent, *table;
static uint8_t *node_closed;
static int heap_cap;
static double *heap_f, *heap_h;
static int32_t *heap_node;
static int hash_mask;

static uint64_t hash_state(const uint64_t *s) {
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int w = 0; w < W; w++) {
        x ^= s[w];
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
        x ^= x >> 31;
    }
    return x;
}

static int before(double f1, double h1, int n1, double f2, double h2, int n2) {
    if (f1 != f2) return f1 < f2;
    if (h1 != h2) return h1 < h2;
    return n1 < n2;
}

static void push(int *size, double f, double h, int node) {
    int i = (*size)++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!before(f, h, node, heap_f[p], heap_h[p], heap_node[p])) break;
        heap_f[i] = heap_f[p]; heap_h[i] = heap_h[p]; heap_node[i] = heap_node[p];
        i = p;
    }
    heap_f[i] = f; heap_h[i] = h; heap_node[i] = node;
}

static int pop(int *size) {
    int top = heap_node[0];
    int last = --(*size);
    double f = heap_f[last], h = heap_h[last];
    int node = heap_node[last], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= last) break;
        if (c + 1 < last && before(heap_f[c + 1], heap_h[c + 1], heap_node[c + 1], heap_f[c], heap_h[c], heap_node[c])) c++;
        if (!before(heap_f[c], heap_h[c], heap_node[c], f, h, node)) break;
        heap_f[i] = heap_f[c]; heap_h[i] = heap_h[c]; heap_node[i] = heap_node[c];
        i = c;
    }
    if (last > 0) { heap_f[i] = f; heap_h[i] = h; heap_node[i] = node; }
    return top;
}

static double heuristic(const uint64_t *s, int g, double c_min) {
    int unsat = 0;
    for (int j = atom_start[g]; j < atom_start[g + 1]; j++)
        if (!holds((s[atoms[j].word] >> atoms[j].shift) & atoms[j].mask, atoms[j].op, atoms[j].k)) unsat++;
    if (!unsat) return 0.0;
    int e = max_achieved[g] > 0 ? max_achieved[g] : 1;
    return (double)((unsat + e - 1) / e) * c_min;
}

/* Returns the plan cost, or -1 when no plan exists / the node lists fill up. */
static double search(const uint64_t *start, int g, long *expanded_out) {
    double c_min = INFINITY;
    for (int a = 0; a < A; a++) c_min = cost[a] < c_min ? cost[a] : c_min;
    memcpy(node_state, start, 8 * W);
    int count = 1, size = 0;
    long expanded = 0;
    double result = -1.0;
    node_g[0] = 0; node_h[0] = heuristic(start, g, c_min); node_parent[0] = -1; node_closed[0] = 0;
    int slot = hash_state(start) & hash_mask;
    table[slot] = 0;
    push(&size, node_h[0], node_h[0], 0);
    uint64_t child[MAXW];
    while (size > 0) {
        int n = pop(&size);
        if (node_closed[n]) continue;
        const uint64_t *s = node_state + (size_t)n * W;
        if (masks_hold(s, goal_mask + (size_t)g * W, goal_value + (size_t)g * W) &&
            conds_hold(s, goal_ints, gint_start[g], gint_start[g + 1])) { result = node_g[n]; break; }
        node_closed[n] = 1;
        expanded++;
        for (int a = 0; a < A; a++) {
            if (!masks_hold(s, pre_mask + (size_t)a * W, pre_value + (size_t)a * W)) continue;
            if (!conds_hold(s, pre_ints, pre_start[a], pre_start[a + 1])) continue;
            for (int w = 0; w < W; w++) child[w] = (s[w] & ~eff_clear[(size_t)a * W + w]) | eff_set[(size_t)a * W + w];
            for (int j = step_start[a]; j < step_start[a + 1]; j++) {
                Step *st = &steps[j];
                int64_t v = (int64_t)((child[st->word] >> st->shift) & st->mask) + st->delta;
                if (v < 0) v = 0;
                if (v > (int64_t)st->hi) v = (int64_t)st->hi;
                child[st->word] = (child[st->word] & ~(st->mask << st->shift)) | ((uint64_t)v << st->shift);
            }
            double gc = node_g[n] + cost[a];
            int pos = hash_state(child) & hash_mask, known = -1;
            while (table[pos] >= 0) {
                if (!memcmp(node_state + (size_t)table[pos] * W, child, 8 * W)) { known = table[pos]; break; }
                pos = (pos + 1) & hash_mask;
            }
            if (known < 0) {
                if (count >= MAXN) goto done;
                known = count++;
                memcpy(node_state + (size_t)known * W, child, 8 * W);
                table[pos] = known;
                node_h[known] = heuristic(child, g, c_min);
                node_closed[known] = 0;
            } else if (node_closed[known] || gc >= node_g[known]) {
                continue;
            }
            node_g[known] = gc; node_parent[known] = n;
            if (size >= heap_cap) goto done;
            push(&size, gc + node_h[known], node_h[known], known);
        }
    }
done:
    for (int i = 0; i < count; i++) {  /* leave the table empty for the next search */
        int pos = hash_state(node_state + (size_t)i * W) & hash_mask;
        while (table[pos] != i) pos = (pos + 1) & hash_mask;
        table[pos] = -1;
    }
    *expanded_out = expanded;
    return result;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: astar INPUT [COSTS_OUT]\n"); return 2; }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 2; }
    W = read_i32(f); A = read_i32(f); G = read_i32(f); N = read_i32(f); MAXN = read_i32(f);
    if (W > MAXW) { fprintf(stderr, "at most %d words\n", MAXW); return 2; }
    pre_mask = read_block(f, 8, (size_t)A * W); pre_value = read_block(f, 8, (size_t)A * W);
    eff_set = read_block(f, 8, (size_t)A * W); eff_clear = read_block(f, 8, (size_t)A * W);
    cost = read_block(f, 8, A);
    pre_start = read_block(f, 4, A + 1); pre_ints = read_block(f, sizeof(Cond), pre_start[A]);
    step_start = read_block(f, 4, A + 1); steps = read_block(f, sizeof(Step), step_start[A]);
    goal_mask = read_block(f, 8, (size_t)G * W); goal_value = read_block(f, 8, (size_t)G * W);
    gint_start = read_block(f, 4, G + 1); goal_ints = read_block(f, sizeof(Cond), gint_start[G]);
    atom_start = read_block(f, 4, G + 1); atoms = read_block(f, sizeof(Cond), atom_start[G]);
    max_achieved = read_block(f, 4, G);
    q_states = read_block(f, 8, (size_t)N * W); q_goals = read_block(f, 4, N);
    fclose(f);

    int hsize = 2;
    while (hsize < 2 * MAXN) hsize <<= 1;
    hash_mask = hsize - 1;
    heap_cap = MAXN * (A > 0 ? A : 1);
    node_state = malloc(8 * (size_t)W * MAXN); node_g = malloc(8 * (size_t)MAXN); node_h = malloc(8 * (size_t)MAXN);
    node_parent = malloc(4 * (size_t)MAXN); node_closed = malloc(MAXN);
    heap_f = malloc(8 * (size_t)heap_cap); heap_h = malloc(8 * (size_t)heap_cap); heap_node = malloc(4 * (size_t)heap_cap);
    table = malloc(4 * (size_t)hsize);
    for (int i = 0; i < hsize; i++) table[i] = -1;

    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    long solved = 0, expanded_total = 0;
    double checksum = 0;
    double *costs = malloc(8 * (size_t)(N ? N : 1));
    for (int i = 0; i < N; i++) {
        long e;
        double c = search(q_states + (size_t)i * W, q_goals[i], &e);
        expanded_total += e;
        costs[i] = c;
        if (c >= 0) { solved++; checksum += c; }
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    if (argc > 2) {
        FILE *o = fopen(argv[2], "wb");
        if (!o || fwrite(costs, 8, (size_t)N, o) != (size_t)N) { perror(argv[2]); return 2; }
        fclose(o);
    }
    double cpu = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    printf("{\"queries\": %d, \"solved\": %ld, \"cpu_seconds\": %.6f, \"expanded\": %ld, \"cost_sum\": %.17g}\n",
           N, solved, cpu, expanded_total, checksum);
    return 0;
}
