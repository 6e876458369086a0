"""Thresholds set by measurement: where one route, form or arithmetic becomes faster than
another, and how much work a default limit allows. Each says what set it (a benchmark of
benchmarks/, on a 2-core machine; re-measure there before changing one). They choose how
a result is computed, never what it is: a threshold on the wrong side costs time, not a
verdict.

Constants only, no imports: the base layer of docs/architecture.md (the command line
reads the option defaults here through defaults.py).
"""

from __future__ import annotations

# -- which route first (verifiers/multiparty) ----------------------------------------------
# `--method auto` (and `certify`): RR's exact certificate on all 2^k inputs is the first
# route up to this many parties for every problem; beyond, a problem that the orbit
# method reduces is proved on its orbits first (benchmarks/bench_orbits.py: the orbit
# certificate takes the same 0.6 s at any k, where the certificate on all 2^k inputs of a
# majority and a party's `sum` under -abs takes 1.2 s at k = 8, 4 s at k = 10, 29 s at
# k = 12), one without symmetry on all inputs while they can be tabulated (spec/tables.py,
# MAX_TABULATED_PARTIES)
ALL_INPUTS_PARTIES = 8
# `--lp-form auto`: the dense corner LP below this many parties, when it fits
# (benchmarks/bench_forms.py: up to k = 8 the dense form solves a party's `sum` under
# -abs 1.2 to 3 times faster than chain, a random table about as fast or up to 1.7 times
# faster; from k = 9 on chain's O(k 2^k) non-zeros win)
DENSE_BELOW_PARTIES = 9

# -- default limits -------------------------------------------------------------------------
# Under a minute (benchmarks/bench_xor.py): observer XOR at k = 10 (66,560 non-zeros)
# verifies both accuracies in ~17 s; k = 11 (141,312) takes ~96 s.
DEFAULT_MAX_NONZEROS = 70_000
# Exact work of the orbit method (theory/orbits/space.py: integer operations of the
# transforms, about orbits x sum of class sizes x columns; benchmarks/bench_orbits.py):
# k = 1000 in one class with two outputs is about 6e6 (a few seconds); 5e7 is about half
# a minute.
DEFAULT_MAX_ORBIT_WORK = 50_000_000
# The largest value --max-nonzeros, --max-orbit-work, --grid, --samples and --restarts
# take: far beyond what any run can do (1e15 non-zeros are 8 PB), and within floats, in
# which the size estimates and their messages work
LARGEST_LIMIT = 10**15
# `--jobs` at most (worker processes, or Dask workers)
MAX_JOBS = 1024
# The size guard is one rule (docs/cli.md, --max-nonzeros): --max-nonzeros, when given,
# refuses every LP estimated above it, of every kind. Unset, each kind is guarded by what
# sets its cost: an LP of parties by DEFAULT_MAX_NONZEROS above (the corner LP's time);
# a count problem, whose LPs are sparse and fast for their size (n = 200: ~250,000
# non-zeros, seconds), by its estimated memory (COUNT_MAX_BYTES: the loss's exact tables,
# G, the prior LP's products and its largest LP; verifiers/count/verifier.py, check_size)
# and, before the optimal-mechanism LP is built, by its estimated time against the time
# left in the run (COUNT_LP_SECONDS below, --timeout).
COUNT_MAX_BYTES = 2 << 30
# ... and, --max-nonzeros unset, the least favourable prior's LP (|S| + 1 non-zeros a row)
# grows to at most this many rows per answer 0..n (n = 200, epsilon 0.1 and 1: abs and
# square end with 5 to 8 rows per answer, the indicator 4 to 16, min(|i - r|, 5) 9 to 33)
COUNT_PRIOR_ROWS = 64
# The memory of an LP per non-zero (COO build, CSC copy and HiGHS's own copies, measured
# roughly with benchmarks/bench_xor.py): what a size refusal quotes.
BYTES_PER_NONZERO = 80
# `dpverify release`: the stage matrices are built exactly (about 3 s at n = 300)
MAX_RELEASE_N = 300

# -- time ------------------------------------------------------------------------------------
# A float LP whose failure is settled exactly (the corner LP of the method `lp`) is
# abandoned after this many seconds (unless the API's time_limit says otherwise), and the
# verdict is settled exactly: near-degenerate LPs, such as observer XOR at k = 8 and
# epsilon = 0.1 in the worst case, kept HiGHS busy for more than ten minutes, while the
# exact certificate takes a second (benchmarks/bench_xor.py --epsilon 0.1).
FLOAT_LP_SECONDS = 20.0
# What one unit of --max-orbit-work costs (DEFAULT_MAX_ORBIT_WORK above: 5e7 units in
# about half a minute): a route whose estimated seconds exceed the time left in the run
# is not started (its refusal names the run's limit and --timeout).
ORBIT_WORK_PER_SECOND = 1_500_000
# Count problems (benchmarks/bench_count.py): HiGHS's interior point method on the
# optimal-mechanism LP takes about COUNT_LP_SECONDS x (non-zeros / 1e5)^2.5 seconds (n = 100,
# 61,000 non-zeros: 3.9 s; n = 200, 242,000: 135 s, load 3.5; the constant is half that fit,
# so that only an LP clearly beyond the time left is refused); an LP whose estimate
# exceeds the time left in the run is not built (its refusal names --timeout).
COUNT_LP_SECONDS = 7.0
# Without the optimal-mechanism LP's least favourable prior as a hint, that generation
# gives up for the direct LP over T when no q of positive value has been found in this many
# rounds: abs and square losses converge in 9 to 13 rounds at n = 200, min(|i - r|, 5) at
# epsilon 1 in 40 (its q of positive value from round 13; its direct LP takes 420 s); the
# indicator at epsilon = 0.1 jumps between point masses (value 0) for all 60 rounds, while
# its direct LP takes 2.3 s at n = 100 and 26 to 54 s at n = 200 (load 4.5 to 7).
COUNT_GENERATION_ROUNDS = 16
# From n = COUNT_BAND_FROM_N the generation's first rows also hold the answers within
# COUNT_BAND of each k (count/lps.py, best_post_processing's `band`): no q then zigzags
# between point masses, and fewer rounds are needed (benchmarks/bench_speed.py --families
# count; n = 200, epsilon 0.1 and 1, load 4.5: abs 5.8 and 1.9 s without it, 5.9 and
# 0.2 s with it; square 4.2, 3.4 -> 2.7, 0.2; the indicator 7.3, 1.5 s and then the direct
# LP over T (13 to 47 s) -> 1.0, 0.7; min(|i - r|, 5) 136, 5.3 -> 7.0, 0.4). Below, the
# generation takes a few rounds of small LPs without it, and its results (equal up to
# rounding) stay as they were.
COUNT_BAND = 2
COUNT_BAND_FROM_N = 100

# -- exact or interval arithmetic first -------------------------------------------------------
# The reduced (orbit) LP of a worst-case certificate on all inputs is dense, about
# |orbits|^2 * |Y| non-zeros, against about 3 k 2^k |Y| for the chain-form LP on all
# inputs: used while |orbits|^2 <= REDUCED_FACTOR * 2^k (benchmarks/bench_certify.py)
REDUCED_FACTOR = 16
# Without symmetry, from this many inputs on (k >= 9) the worst case's hints come from the
# dense interior-point method (theory/worst_ipm.py: 2 s at k = 9, 6 s at k = 11, 40 s at
# k = 12) rather than HiGHS on the chain-form LP (14 s at k = 10, minutes at k = 11;
# benchmarks/bench_worst12.py)
DENSE_FROM_INPUTS = 512
# Below that, RR's worst-case LP on all inputs is given to HiGHS dense (rows scaled, tiny
# entries dropped: it gives hints only) while rows x columns x outputs is at most this,
# and in chain form beyond: at 7-8 parties HiGHS took 0.1-0.3 s on the dense form where
# the chain form took 0.4-3.5 s, and at 590,000 (8 parties, `sum`) 1.5 s against 1.0 s
DENSE_HINT_NONZEROS = 300_000
# The dense method keeps P (rows x columns) and M (rows x rows) in memory and does about
# rows^2 * columns multiply-adds per iteration: 2^12 inputs is its design point
# (theory/worst_ipm.py; here so that a route can ask without importing the method)
MAX_DENSE_INPUTS = 4096
# The exact certificate on all 2^k inputs solves RR's worst-case LP in floats for hints;
# its LP may be larger than the verifier's own (it runs once per agent;
# benchmarks/bench_certify.py)
PROOF_HINT_NONZEROS = 600_000
# Without symmetry `verify` builds the certificate on all inputs in floats (an interval
# bracket, theory/certificates/interval.py) before exact rationals from this many parties
# on when the lambdas come from epsilon (the exact certificate is a bracket too, with
# brackets of e^eps in its integers), and from INTERVAL_FROM_PARTIES with exact lambdas
# (an exact certificate on 2^13 inputs takes seconds; 2^20, minutes;
# benchmarks/bench_certify.py). Below, the exact certificate usually takes well under a
# second and its bracket is the narrower (not always: a rule repair of 142 x 269 rationals
# of 447 bits took 3 s at 7 parties, docs/benchmarks.md; the exact simplex of a small
# worst case is bounded by QUICK_PIVOT_WORK).
INTERVAL_FROM_PARTIES_EPSILON = 8
INTERVAL_FROM_PARTIES = 13
# The exact orbit certificate (which can prove the optimum exactly) is built first while
# its integer work is at most this; beyond it `verify` builds the interval certificate
# (arb balls, theory/orbits/interval.py) first, and the exact one only when the interval
# bracket cannot decide (benchmarks/bench_orbits.py). `certify` always builds the exact
# one.
EXACT_ORBIT_WORK = 2_000_000
# With lambdas from epsilon the exact orbit certificate carries brackets of e^eps in its
# integers (and its worst case an LP on orbits): from this many parties `verify` builds
# the interval one first (benchmarks/bench_orbits.py). Below, the exact one is fast and
# `--method orbit` keeps the full LP's values to the last bits (tests/test_orbits.py
# compares them up to k = 8).
ORBIT_INTERVAL_FROM_PARTIES_EPSILON = 9
# The exact revised simplex keeps its rows x rows systems small: the worst-case LP on
# orbits of a sub-problem is solved exactly while it has at most this many rows and this
# many columns (benchmarks/bench_orbits.py)
ORBIT_EXACT_ROWS = 400
ORBIT_EXACT_COLUMNS = 3_000
# With exact lambdas the worst case's exact orbit certificate closes by that simplex when
# the float hints do not prove the optimum; beyond this many orbits its rational pivots
# grow (parity at lambda = 3/2 and 2: 64 orbits 1 s, 81 orbits 72 s; issue 25), so
# `verify` brackets first (a checked bracket within --tol decides; `certify` stays exact)
ORBIT_EXACT_SIMPLEX_ORBITS = 64
# ... and below it, where the float hints already bracket the optimum within --tol, that
# simplex gets this much work in `verify` (theory/worst_lp.py pivot_budget: about
# work / rows^3 pivots; 33 at 114 rows, about 0.7 s) before the checked bracket stands:
# parity at lambdas 4/3 and 5/2 in classes of 2 and 18 (57 orbits, a bracket of 1e-14)
# took 891 pivots, 19 s (issue 25). `certify` pivots to the end. Without symmetry a small
# worst case's exact simplex with exact lambdas gets it in 64-bit words of the lambdas'
# products (certificates/worst.py quick_pivot_work); with lambdas from epsilon the checked
# bracket stands at once, as on orbits (6 parties: 0.5 s a pivot, 11-20 s in all before).
QUICK_PIVOT_WORK = 50_000_000
# With lambdas from epsilon `verify` lets the rationalised hints' checked bracket stand,
# when it is within half of --tol, rather than repair the worst case's rule by exact row
# reduction past this many 64-bit word operations (certificates/repair.py
# rule_repair_work: at 6-7 parties from epsilon, repairs of 5e6-4e7 took 0.8-3.5 s, and
# none of them succeeded; with exact lambdas repairs of 2e6-4e6 at 8 parties took 0.1-0.3
# s and proved, so they always run; `certify` repairs).
QUICK_REPAIR_WORK = 2_000_000
# Corner entries 1/(1 + lambda) below this (epsilon above about 13.8) make RR's worst-case
# LP on all inputs badly scaled for a float LP (below 1e-12 HiGHS cannot hold it at all)
# and its exact simplex slow (integers of hundreds of digits): its hints come from the
# dense interior-point method, and `verify` tries the interval certificate first
# (measured at k = 7 with epsilons up to 27 or 30: 48-63 s, then about a second; issue 25)
EXTREME_ENTRY = 1e-6
# At an extreme level the worst case's hints come first from the sub-cubes over the parties
# whose corner entry is below each of these in turn (at most SPLIT_PARTIES of them, the
# most extreme first: 2^SPLIT_PARTIES sub-problems; theory/worst_candidates.py), where the
# dense method on all inputs stalled (an observer at k = 9 with epsilons 15-27 beside 0.1:
# a bracket of 2e-5 after 7 s and HiGHS's fallback 11 s; the sub-cubes close it in 2 s).
# The sub-cubes' rule is off by about the fixed parties' entries: the larger entry first
# (more parties fixed, smaller sub-problems: the observer above), then the smaller ones (a
# party at k = 9 with epsilons 18 and 22.5 among 0.1-12: 8e-9 at 1e-6, 2e-10 at 1e-8 in
# 0.2 s; an observer with 20, 25 and 30 among 0.5-10: 9.3e-10 at 1e-6 and 1e-8).
# A sub-problem's LP gets at most SPLIT_SECONDS (the simplex spent 11 s on sub-cubes of 256
# inputs with levels of 15-18 in them; the useful ones take 0.1 s); then the dense method
# when the bracket is still open, and HiGHS's dense LP (DENSE_FALLBACK_*) after it.
SPLIT_ENTRIES = (EXTREME_ENTRY, 1e-8, 1e-10)
SPLIT_PARTIES = 10
SPLIT_SECONDS = 0.5
# Where the dense method on all inputs can run, the sub-cubes go before it briefly: within
# CUBE_FIRST_SECONDS an agent (each LP at most the time left), the levels whose rule may
# lose at most CUBE_HOPELESS times the bracket that decides (the fixed parties' entries,
# 1 - prod (1 - 1/(1 + lambda_i))) and whose LPs' non-zeros times m - 1 are at most
# CUBE_FIRST_WORK (any, when at least half the parties are extreme: the dense method
# stalls there); every other level, and one the time cut short, after the dense method
# while its bracket is still open (hints.py, block_hints). Measured at k = 9 (issue 25's
# family, seeds 0-13, load 1-2): sub-cubes of 128 or 256 inputs took HiGHS 0.03-0.3 s a
# level on two outputs (and decided), 0.2-1.6 s on three or four outputs and 1-1.3 s
# (out of time) on ten, where the dense method on one thread decides in 0.15-0.9 s. A
# level's bracket was 0.5-1 times its rule's possible loss in 18 of 26 levels measured,
# 1/30 to 1/650 of it in the others (three parties at 20 fixed: 6.2e-9 possible, 1.4e-10
# and 9.4e-12 found); levels of 7 or 8 parties fixed at entries near 1e-6, 250-1900 times
# the decisive bracket, bracketed 2.3e-7 to 1.5e-6
CUBE_FIRST_SECONDS = 0.6
CUBE_HOPELESS = 100.0
CUBE_FIRST_WORK = 300_000
# ... and the dense method is spared when the sub-cubes' float bracket is within this
# fraction of the tolerance (the interval certificate's rounding adds about 1e-16; a
# wider bracket is decided by the slower routes after it, never guessed)
SPLIT_MARGIN = 0.9
# The dense method's bracket (gains in [0, 1]) wider than this (and than SPLIT_MARGIN of
# the tolerance) is compared with HiGHS's
# solve of the dense LP (tiny entries dropped) up to this many inputs and seconds (a
# method: the interior point, then the simplex while the bracket is still open): the
# dense method stalled at 1.5e-5 on a 9-party worst case with epsilons from 2.6 to 29,
# where HiGHS closes to 6e-12 in 0.1 s (issue 25's families)
DENSE_FALLBACK_WIDTH = 1e-10
DENSE_FALLBACK_INPUTS = 512
DENSE_FALLBACK_SECONDS = 10.0
# Before them, the rule's LP on the best prior's ties
# (theory/worst_ipm.py, polish_on_ties) gets at most this many seconds: an observer's
# `sum` at k = 9 that both runs of the method left 2e-9 wide was closed to 6e-11 by an LP
# of 523 columns in 0.24 s (HiGHS's dense LP took 6.5 s); an LP of 1,237 columns that
# closed nothing took 3.2 s. Only from TIES_FROM_INPUTS inputs on: below, HiGHS's dense LP
# takes milliseconds and closes further (a party at k = 5 and epsilon 20 whose value is
# -2.7e-8 of a range of 4: 1.3e-13 wide by HiGHS, 3.6e-12 by the tie LP alone)
TIES_SECONDS = 1.0
TIES_FROM_INPUTS = 256
# ... and right after the dense method's first run, at most this many, on LPs of at most
# this many free entries (measured at k = 9: 522, 523, 640 and 972 free entries took
# 0.2-0.4 s, each closing a bracket the method left at 1e-9 to 1.2e-8, where the steps
# after it took 0.5-7 s; 666, 1,236, 1,254 and 2,020 took past 0.5 s and closed nothing)
EARLY_TIES_SECONDS = 0.5
EARLY_TIES_FREE = 1000
# The dense method on all inputs stops once its bracket is within this share of the
# tolerance (a tenth: 1e-10 of the gains' range at the default --tol; never below the
# method's own target of 1e-11): the bracket decides with a margin, and the iterations
# that narrow it further to 1e-11 took 10-30% of its time at k = 9 (issue 25's family)
DENSE_TARGET_SHARE = 0.1
# The exact simplex on a protocol's transcripts solves a dense rows x rows system per
# pivot: used up to this many rows (live transcripts + inputs of the block;
# benchmarks/bench_falsify.py)
PROTOCOL_EXACT_ROWS = 300
# P on the classes of transcripts (theory/protocols/tree.py) is held exactly up to about
# this much memory (bytes). Beyond, an exact protocol's value is undecided (exit status
# 3: never floats in its place); a float protocol is valued in floats.
MAX_EXACT_BYTES = 1 << 28

# -- the protocol search under delta > 0 (verifiers/approximate) ------------------------------
# Its budget per agent and accuracy, by parties (benchmarks/bench_approx.py, `family` and
# `cases`: every member up to k = 4 within 5 s, k = 5 within 30 s): up to 3 parties the
# flow is nearly always played out within the protocol files' transcripts; from 4 the
# schedule LPs (the fallback) take seconds each; from 5 even one rarely fits.
SEARCH_SECONDS = {3: 20.0, 4: 2.5}
SEARCH_SECONDS_MORE = 4.0
# No greedy rounds after the flow's schedule from this many parties, and no schedule LP on
# the flow's whole schedule beyond FLOW_LP_PARTIES (the same benchmark).
GREEDY_PARTIES = 3
FLOW_LP_PARTIES = 5

# -- exact linear algebra ---------------------------------------------------------------------
# The repair of float hints (theory/certificates/repair.py) solves its complementary-
# slackness systems exactly, in Fractions up to this many entries (rows x (unknowns + 1)),
# by python-flint beyond it or once python-flint is loaded (the reduced rows are unique: the
# same either way). Importing python-flint costs a process 20-28 ms; the shipped problems'
# systems of up to 40 entries take 0.02-0.35 ms in Fractions (python-flint 0.02-0.09 ms),
# from 42 entries 0.5-13 ms (python-flint 0.1-1.4 ms), so a small verification does not
# load python-flint and a larger one pays its import once (benchmarks/bench_rref.py)
FLINT_RREF_ENTRIES = 40
