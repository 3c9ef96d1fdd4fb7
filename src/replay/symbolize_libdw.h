/* symbolize_libdw: the libdw functions the symbolizer calls, as a table, so that the same code
 * runs on the linked library (tlsan replay) and on one loaded with dlopen (libtlsan.so, which
 * must not depend on elfutils: a program that never reports never loads it). */
#ifndef TLSAN_SYMBOLIZE_LIBDW_H
#define TLSAN_SYMBOLIZE_LIBDW_H

#include <elfutils/libdwfl.h>

/* X(field, libdw name): every function used, and the callbacks handed to dwfl_begin. */
#define SYMBOLIZE_LIBDW_FUNCTIONS(X)                                                               \
    X(begin, dwfl_begin)                                                                           \
    X(end, dwfl_end)                                                                               \
    X(report_begin, dwfl_report_begin)                                                             \
    X(report_elf, dwfl_report_elf)                                                                 \
    X(report_end, dwfl_report_end)                                                                 \
    X(module_addrinfo, dwfl_module_addrinfo)                                                       \
    X(module_getsrc, dwfl_module_getsrc)                                                           \
    X(lineinfo, dwfl_lineinfo)                                                                     \
    X(module_addrdie, dwfl_module_addrdie)                                                         \
    X(getscopes, dwarf_getscopes)                                                                  \
    X(tag, dwarf_tag)                                                                              \
    X(diename, dwarf_diename)                                                                      \
    X(attr_integrate, dwarf_attr_integrate)                                                        \
    X(formudata, dwarf_formudata)                                                                  \
    X(getsrcfiles, dwarf_getsrcfiles)                                                              \
    X(filesrc, dwarf_filesrc)                                                                      \
    X(module_nextcu, dwfl_module_nextcu)                                                           \
    X(ranges, dwarf_ranges)                                                                        \
    X(getsrc_die, dwarf_getsrc_die)                                                                \
    X(lineno, dwarf_lineno)                                                                        \
    X(linesrc, dwarf_linesrc)                                                                      \
    X(build_id_find_elf, dwfl_build_id_find_elf)                                                   \
    X(standard_find_debuginfo, dwfl_standard_find_debuginfo)                                       \
    X(offline_section_address, dwfl_offline_section_address)

struct symbolize_libdw {
#define SYMBOLIZE_LIBDW_FIELD(field, name) __typeof__(name) *field;
    SYMBOLIZE_LIBDW_FUNCTIONS(SYMBOLIZE_LIBDW_FIELD)
#undef SYMBOLIZE_LIBDW_FIELD
};

#endif
