/* pe.h: what find-tag reads in a driver file (PE/COFF, Microsoft's "PE Format" specification):
 * the section table, where a tag's bytes stand (in code, as the 4-byte immediate operand of
 * the ExAllocatePoolWithTag call, or in data), and the version resource (file version,
 * product, company). Pure and portable: it reads a buffer, so it is tested on Linux and fuzzed.
 *
 * Layout read: "MZ", e_lfanew at 0x3C -> "PE\0\0", COFF header (20 bytes: Machine,
 * NumberOfSections, ..., SizeOfOptionalHeader), optional header (magic 0x10B PE32 or 0x20B
 * PE32+; data directory 2 = resources at offset 112 / 128 of it), section headers (40 bytes:
 * Name, VirtualSize, VirtualAddress, SizeOfRawData, PointerToRawData, ..., Characteristics).
 * Resources: directory tree type RT_VERSION (16) -> first name -> first language -> data entry
 * (an RVA), holding VS_VERSIONINFO: VS_FIXEDFILEINFO (signature 0xFEEF04BD, dwFileVersionMS/LS)
 * and StringFileInfo -> StringTable -> String blocks ("CompanyName", "ProductName", ...),
 * UTF-16LE, each block 4-byte aligned.
 */
#ifndef PW_PE_H
#define PW_PE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PW_PE_MAX_SECTIONS 96 /* the loader's limit */

/* Where a tag's bytes were found, best first (find-tag ranks files by it). */
typedef enum {
    PW_PE_MATCH_NONE = 0,
    PW_PE_MATCH_CODE = 1, /* in an executable section: the immediate operand of a call */
    PW_PE_MATCH_DATA = 2, /* in another section (a table of tags, a string) */
    PW_PE_MATCH_FILE = 3  /* outside every section (headers, overlay), or not a PE file */
} pw_pe_match_t;

typedef struct pw_pe_section_s {
    char name[9];
    uint32_t va, vsize;     /* RVA and size in memory */
    uint32_t raw, raw_size; /* file offset and size in the file */
    uint32_t flags;         /* Characteristics */
} pw_pe_section_t;

typedef struct pw_pe_s {
    uint16_t machine; /* 0x14c x86, 0x8664 x64, 0xaa64 arm64 */
    int pe32plus;     /* 1 for PE32+ (64-bit) */
    uint32_t rsrc_rva, rsrc_size;
    pw_pe_section_t sec[PW_PE_MAX_SECTIONS];
    size_t n_sec;
} pw_pe_t;

/* The version resource's facts; "" when absent. UTF-8. */
typedef struct pw_pe_version_s {
    char file_version[48]; /* "10.0.19041.1" from VS_FIXEDFILEINFO (else the FileVersion string) */
    char product[128];     /* ProductName */
    char company[128];     /* CompanyName */
    char description[128]; /* FileDescription */
} pw_pe_version_t;

/* Reads the headers of the PE image in buf[0..len). Returns 0, or PW_EFORMAT (not a PE file:
 * no MZ/PE signature, an unknown optional-header magic) / PW_EPARSE (headers or section table
 * outside the buffer, too many sections) with `d` saying what. */
int pw_pe_parse(const uint8_t *buf, size_t len, pw_pe_t *out, pw_diag_t *d);

/* Where tag[0..tag_len) stands in buf (the file `pe` was parsed from, or any file when `pe` is
 * NULL): the best kind over all its occurrences, PW_PE_MATCH_NONE when it is not there.
 * *offset (may be NULL) gets the file offset of the occurrence of that kind. */
pw_pe_match_t pw_pe_find(const pw_pe_t *pe, const uint8_t *buf, size_t len, const uint8_t *tag,
                         size_t tag_len, uint64_t *offset);

/* Fills `out` from the version resource. Returns 0, PW_ENOENT (no version resource), or
 * PW_EPARSE (a resource structure out of bounds: `out` holds what was read before). */
int pw_pe_version(const pw_pe_t *pe, const uint8_t *buf, size_t len, pw_pe_version_t *out);

/* "code", "data", "file" or "none". */
const char *pw_pe_match_name(pw_pe_match_t m);

#endif /* PW_PE_H */
