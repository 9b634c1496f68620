/* alert.c: see alert.h. Entries live in a chained hash table keyed by the four labels. */
#include "alert.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"

typedef struct entry_s {
    struct entry_s *next;
    uint64_t hash;
    pw_alert_key_t key;
    pw_alert_state_t state;
    int64_t since_ms;   /* episode start */
    int64_t changed_ms; /* last transition */
    int64_t keep_ms;    /* resolved_keep_ms of the rule that resolved it */
    double value;
} entry_t;

struct pw_alert_set_s {
    entry_t **buckets;
    size_t nbuckets; /* power of two */
    size_t count;
};

#define DEFAULT_KEEP_MS (15 * 60 * 1000LL)

static uint64_t fnv(uint64_t h, const char *s, size_t max)
{
    for (size_t i = 0; i < max && s[i]; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return (h ^ 0xff) * 1099511628211ULL; /* separator so ("ab","c") != ("a","bc") */
}

static uint64_t key_hash(const pw_alert_key_t *k)
{
    uint64_t h = 14695981039346656037ULL;
    h = fnv(h, k->host, sizeof(k->host));
    h = fnv(h, k->tag, sizeof(k->tag));
    h = fnv(h, k->pool, sizeof(k->pool));
    return fnv(h, k->severity, sizeof(k->severity));
}

static int key_eq(const pw_alert_key_t *a, const pw_alert_key_t *b)
{
    return strcmp(a->host, b->host) == 0 && strcmp(a->tag, b->tag) == 0 &&
           strcmp(a->pool, b->pool) == 0 && strcmp(a->severity, b->severity) == 0;
}

static bool labels_ok(const pw_alert_key_t *k)
{
    return memchr(k->host, 0, sizeof(k->host)) && memchr(k->tag, 0, sizeof(k->tag)) &&
           memchr(k->pool, 0, sizeof(k->pool)) && memchr(k->severity, 0, sizeof(k->severity));
}

int pw_alert_set_new(pw_alert_set_t **out)
{
    if (out == NULL)
        return PW_EINVAL;
    pw_alert_set_t *s = pw_calloc(1, sizeof(*s));
    if (s == NULL)
        return PW_ENOMEM;
    s->nbuckets = 64;
    s->buckets = pw_calloc(s->nbuckets, sizeof(*s->buckets));
    if (s->buckets == NULL) {
        pw_free(s);
        return PW_ENOMEM;
    }
    *out = s;
    return 0;
}

void pw_alert_set_free(pw_alert_set_t *set)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->nbuckets; i++) {
        entry_t *e = set->buckets[i];
        while (e) {
            entry_t *n = e->next;
            pw_free(e);
            e = n;
        }
    }
    pw_free(set->buckets);
    pw_free(set);
}

static entry_t **find(const pw_alert_set_t *set, const pw_alert_key_t *key, uint64_t h)
{
    entry_t **pp = &set->buckets[h & (set->nbuckets - 1)];
    while (*pp && !((*pp)->hash == h && key_eq(&(*pp)->key, key)))
        pp = &(*pp)->next;
    return pp;
}

/* Doubles the table when the load exceeds 1; failure only keeps the chains longer. */
static void maybe_grow(pw_alert_set_t *set)
{
    if (set->count < set->nbuckets)
        return;
    size_t nb = set->nbuckets * 2;
    entry_t **b = pw_calloc(nb, sizeof(*b));
    if (b == NULL)
        return;
    for (size_t i = 0; i < set->nbuckets; i++) {
        entry_t *e = set->buckets[i];
        while (e) {
            entry_t *n = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
            e = n;
        }
    }
    pw_free(set->buckets);
    set->buckets = b;
    set->nbuckets = nb;
}

static void emit(pw_alert_transition_t *tr, const entry_t *e, pw_alert_state_t from,
                 pw_alert_state_t to, int64_t now, double value)
{
    if (tr == NULL)
        return;
    tr->key = e->key;
    tr->from = from;
    tr->to = to;
    tr->at_ms = now;
    tr->active_since_ms = e->since_ms;
    tr->value = value;
}

int pw_alert_restore(pw_alert_set_t *set, const pw_alert_key_t *key, int64_t since_ms, double value)
{
    return pw_alert_restore_state(set, key, PW_ALERT_FIRING, since_ms, value);
}

int pw_alert_restore_state(pw_alert_set_t *set, const pw_alert_key_t *key, pw_alert_state_t state,
                           int64_t since_ms, double value)
{
    if (set == NULL || key == NULL || isnan(value) || !labels_ok(key) ||
        (state != PW_ALERT_PENDING && state != PW_ALERT_FIRING))
        return PW_EINVAL;
    uint64_t h = key_hash(key);
    entry_t **pp = find(set, key, h);
    entry_t *e = *pp;
    if (e == NULL) {
        e = pw_calloc(1, sizeof(*e));
        if (e == NULL)
            return PW_ENOMEM;
        e->hash = h;
        e->key = *key;
        *pp = e;
        set->count++;
    }
    e->state = state;
    e->since_ms = e->changed_ms = since_ms;
    e->value = value;
    maybe_grow(set);
    return 0;
}

int pw_alert_eval(pw_alert_set_t *set, const pw_alert_rule_t *rule, const pw_alert_key_t *key,
                  double value, int64_t now_ms, pw_alert_transition_t *tr)
{
    if (set == NULL || rule == NULL || key == NULL || isnan(value) || rule->for_ms < 0 ||
        !(rule->hysteresis >= 0.0) || isnan(rule->threshold) || !labels_ok(key))
        return PW_EINVAL;
    uint64_t h = key_hash(key);
    entry_t **pp = find(set, key, h);
    entry_t *e = *pp;
    bool holds = value >= rule->threshold;
    int64_t keep = rule->resolved_keep_ms > 0 ? rule->resolved_keep_ms : DEFAULT_KEEP_MS;

    if (e == NULL) {
        if (!holds)
            return 0;
        e = pw_calloc(1, sizeof(*e));
        if (e == NULL)
            return PW_ENOMEM;
        e->hash = h;
        e->key = *key;
        e->state = PW_ALERT_INACTIVE;
        e->next = NULL;
        *pp = e;
        set->count++;
    }

    pw_alert_state_t from = e->state, to = from;
    switch (from) {
    case PW_ALERT_INACTIVE:
    case PW_ALERT_RESOLVED:
        if (holds) {
            e->since_ms = now_ms;
            to = rule->for_ms == 0 ? PW_ALERT_FIRING : PW_ALERT_PENDING;
        }
        break;
    case PW_ALERT_PENDING:
        if (!holds)
            to = PW_ALERT_INACTIVE;
        else if (now_ms - e->since_ms >= rule->for_ms)
            to = PW_ALERT_FIRING;
        break;
    case PW_ALERT_FIRING:
        if (value < rule->threshold - rule->hysteresis)
            to = PW_ALERT_RESOLVED;
        break;
    }
    e->value = value;
    if (to == from)
        return 0;
    emit(tr, e, from, to, now_ms, value);
    e->state = to;
    e->changed_ms = now_ms;
    e->keep_ms = keep;
    if (to == PW_ALERT_INACTIVE) {
        *find(set, key, h) = e->next;
        pw_free(e);
        set->count--;
    } else {
        maybe_grow(set);
    }
    return 1;
}

pw_alert_state_t pw_alert_state(const pw_alert_set_t *set, const pw_alert_key_t *key,
                                int64_t *since_ms)
{
    if (set == NULL || key == NULL || !labels_ok(key))
        return PW_ALERT_INACTIVE;
    entry_t *e = *find(set, key, key_hash(key));
    if (e == NULL)
        return PW_ALERT_INACTIVE;
    if (since_ms)
        *since_ms = e->since_ms;
    return e->state;
}

size_t pw_alert_expire(pw_alert_set_t *set, int64_t now_ms)
{
    size_t dropped = 0;
    if (set == NULL)
        return 0;
    for (size_t i = 0; i < set->nbuckets; i++) {
        entry_t **pp = &set->buckets[i];
        while (*pp) {
            entry_t *e = *pp;
            if (e->state == PW_ALERT_RESOLVED && now_ms - e->changed_ms >= e->keep_ms) {
                *pp = e->next;
                pw_free(e);
                set->count--;
                dropped++;
            } else {
                pp = &e->next;
            }
        }
    }
    return dropped;
}

size_t pw_alert_drop_host(pw_alert_set_t *set, const char *host, int64_t now_ms,
                          void (*cb)(const pw_alert_transition_t *tr, void *arg), void *arg)
{
    size_t dropped = 0;
    if (set == NULL || host == NULL)
        return 0;
    for (size_t i = 0; i < set->nbuckets; i++) {
        entry_t **pp = &set->buckets[i];
        while (*pp) {
            entry_t *e = *pp;
            if (strcasecmp(e->key.host, host) != 0) {
                pp = &e->next;
                continue;
            }
            if (cb != NULL && (e->state == PW_ALERT_PENDING || e->state == PW_ALERT_FIRING)) {
                pw_alert_transition_t t;
                emit(&t, e, e->state, PW_ALERT_RESOLVED, now_ms, e->value);
                cb(&t, arg);
            }
            *pp = e->next;
            pw_free(e);
            set->count--;
            dropped++;
        }
    }
    return dropped;
}

size_t pw_alert_count(const pw_alert_set_t *set)
{
    return set ? set->count : 0;
}

void pw_alert_foreach(const pw_alert_set_t *set,
                      void (*cb)(const pw_alert_transition_t *cur, void *arg), void *arg)
{
    if (set == NULL || cb == NULL)
        return;
    for (size_t i = 0; i < set->nbuckets; i++)
        for (entry_t *e = set->buckets[i]; e; e = e->next) {
            pw_alert_transition_t t;
            emit(&t, e, e->state, e->state, e->changed_ms, e->value);
            cb(&t, arg);
        }
}

const char *pw_alert_state_name(pw_alert_state_t s)
{
    switch (s) {
    case PW_ALERT_INACTIVE:
        return "inactive";
    case PW_ALERT_PENDING:
        return "pending";
    case PW_ALERT_FIRING:
        return "firing";
    case PW_ALERT_RESOLVED:
        return "resolved";
    }
    return "unknown";
}
