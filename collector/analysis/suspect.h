/* suspect.h: what the analysis pass publishes (analysis_run.h) and keeps across restarts
 * (alert_file.h): a leak suspect and a host's pass result. Types only, so that both headers
 * name them without including each other. */
#ifndef PW_SUSPECT_H
#define PW_SUSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "detect.h"
#include "sample.h"

/* A leak suspect: (host, tag, pool), the engine's verdict (detect.h) and the finding it belongs
 * to. Tags of one host that grew together (their increments correlate, see analysis_run.c)
 * are one finding: the first-ranked is its head, the others say so, and only the head raises
 * an alert. */
typedef struct pw_suspect_s {
    char host[256];
    uint8_t tag[PW_TAG_MAX];
    uint8_t tag_len;
    uint8_t pool;
    uint8_t head;         /* 1: the finding's head (its alert, its rank) */
    uint16_t group_n;     /* tags in the finding (1: alone) */
    uint32_t group;       /* finding number within the host (the head's candidate slot) */
    uint64_t found_ms;    /* sample time when first judged a leak */
    double finding_score; /* the score of the finding's head */
    uint8_t level;        /* urgency: the pressure level (pw_level_t) of the pool the finding's
                             head grows in (nonpaged, else paged), at publication */
    int64_t eta_ms;       /* that pool's time to exhaustion from the host's newest sample, ms,
                             from its trend or, with too few points for one, from the head's
                             growth (pw_pressure_leak_eta); -1 when none */
    double share;         /* rate / the host pool's growth rate, clamped to [0, 1]; -1 unknown */
    char with[96];        /* head: the finding's other tags ("dentry, kmalloc-64 +2"); else the
                             head's tag */
    pw_detect_t d;        /* the verdict with its numbers and evidence */
} pw_suspect_t;

/* How the pass reckoned one pool's ETA (pw_leak_eta_t says the same for a view). */
typedef struct pw_pool_how_s {
    pw_eta_method_t method;  /* TREND (last 2 h), NET (net growth, under a day), DAY (the last
                                24 h repeated); NONE without an ETA */
    double rate_bytes_per_h; /* the growth the ETA rests on (for DAY: the pace while it grew) */
    int64_t window_ms;       /* the span of the points it came from, ms */
    int64_t grew_ms;         /* DAY: the time of the day the pool grew, ms */
    double day_bytes;        /* DAY: the day's net growth, bytes */
    int64_t since_boot_ms;   /* > 0: the window was cut at the boot at this time (ms since the
                                epoch): the points before it are an earlier boot's */
} pw_pool_how_t;

/* The pass's result for one host. */
typedef struct pw_analysis_host_s {
    pw_pressure_t np, pg;             /* nonpaged and paged pool pressure */
    int have_pressure;                /* np and pg hold a pass's verdict */
    int64_t np_trend_ms, pg_trend_ms; /* window the trend (and ETA) came from: 2 h, or 24 h when
                                         the last 2 h did not rise (a leak that grows in office
                                         hours is flat at night) */
    pw_pool_how_t np_how, pg_how;     /* how each pool's ETA was reckoned */
    uint32_t n_suspects;              /* suspects of this host in the last pass */
    uint32_t rows_judged;             /* rows with a verdict (candidates) */
    int64_t judged_ts;                /* the newest sample time this verdict saw, ms */
} pw_analysis_host_t;

#endif /* PW_SUSPECT_H */
