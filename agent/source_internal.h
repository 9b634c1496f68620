/* source_internal.h: declarations shared by the source_*.c files and source.c only. */
#ifndef PW_SOURCE_INTERNAL_H
#define PW_SOURCE_INTERNAL_H

#include "source.h"

extern const pw_source_ops_t pw__source_win_ops;
extern const pw_source_ops_t pw__source_linux_ops;
extern const pw_source_ops_t pw__source_replay_ops;
extern const pw_source_ops_t pw__source_sim_ops;

#endif /* PW_SOURCE_INTERNAL_H */
