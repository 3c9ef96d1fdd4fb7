/* unwind.h - libunwind made to hold no file descriptor of the program's.
 *
 * libunwind (1.6, x86_64) validates the addresses it reads while it walks frames it has no
 * unwind tables for, and while it first describes a frame (its "conservative checks"): it
 * writes the word to a pipe and reads it back. It opens that pipe when it initialises, on
 * the two lowest free descriptors (3 and 4 in most processes), keeps the numbers, and uses
 * them for the life of the process; when a read fails it opens a new pipe. So the program's
 * first open() got 5, and a daemon that closed its descriptors and opened its own files on 3
 * and 4 had a byte read from the one and a byte written to the other at every validation.
 *
 * unwind_setup replaces the memory accessor of libunwind's local address space (the public
 * unw_get_accessors) with one that validates without any descriptor, and closes the pipe
 * libunwind opened while initialising; libunwind never touches those numbers again, since
 * its accessor was the only user of the pipe. libunwind stays the unwinder. */
#ifndef TLSAN_SHIM_UNWIND_H
#define TLSAN_SHIM_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

/* Initialises libunwind, installs the accessor and closes libunwind's pipe. Idempotent and
 * thread-safe (later calls return at once); call it before the first stack capture, while
 * the process has one thread if it can (between finding the two lowest free numbers and
 * libunwind's pipe2, another thread's open could take them: then no pipe is found there
 * and nothing is closed, and the pipe stays open but unused). Returns true when libunwind
 * is set up to validate without descriptors; false when it could not be (the pipe was then
 * left as it was). */
bool unwind_setup(void);

/* Around one stack capture on this thread: within it, a page found readable is not checked
 * again (the pages may be unmapped between two captures, so nothing is kept across). */
void unwind_capture_begin(void);
void unwind_capture_end(void);

/* The descriptor-free validated read: stores the word at addr in *val and returns true when
 * addr..addr+7 is readable, false otherwise (unmapped, PROT_NONE). process_vm_readv on the
 * process itself; where that is refused (seccomp, ENOSYS), unwind_probe_word. Never faults,
 * leaves errno as it was. */
bool unwind_read_word(uintptr_t addr, uint64_t *val);

/* The fallback: rt_sigprocmask with an invalid `how`, which the kernel answers EFAULT when it
 * cannot copy the 8-byte set at addr and EINVAL (changing nothing) when it can; then the word
 * is read. Exposed for the unit test. */
bool unwind_probe_word(uintptr_t addr, uint64_t *val);

#endif
