/* SPDX-License-Identifier: MIT */
/*
 * A program with known functions for test_symbolize (built with and without
 * -g, and stripped). It prints addresses with what they must be named, then
 * its /proc/self/maps, and exits: the test names them after it is gone.
 *   exact <hex> <function>                 an address inside the function
 *   return <hex> <function> <line>         a return address: the call on that line
 *   inlined <hex> <inner> <line> <outer> <call line>
 *   libc <hex> getpid                      a function of libc (its .dynsym)
 *   libcmain <hex> __libc_start_call_main  main's return address: a local function of
 *                                          libc, named only by libc's debug file
 *   maps                                   then the maps, then "end"
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *ret_addr;

/* The call and the line it is on, kept on one line whatever the formatter does. */
#define CALL_AT(fn, line_var)                                                                      \
	do {                                                                                       \
		fn();                                                                              \
		line_var = __LINE__;                                                               \
	} while (0)

__attribute__((noinline)) void record_return(void)
{
	ret_addr = __builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

static volatile int sink;

/* Longer than one byte: the address printed is inside it. */
__attribute__((noinline)) void known_function(void)
{
	sink++;
	sink++;
}

__attribute__((noinline)) int caller_function(int line)
{
	CALL_AT(record_return, line);
	return line;
}

static inline __attribute__((always_inline)) int inlined_helper(int *line)
{
	CALL_AT(record_return, *line);
	return 1;
}

__attribute__((noinline)) int outer_function(int *call_line)
{
	int line = 0, r;

	r = inlined_helper(&line), *call_line = __LINE__;
	return r + line;
}

int main(void)
{
	char buf[4096];
	size_t n;
	FILE *m;
	int line, call_line;

	known_function();
	printf("exact %lx known_function\n", (unsigned long)(void *)known_function + 1);
	line = caller_function(0);
	printf("return %lx caller_function %d\n", (unsigned long)ret_addr, line);
	line = outer_function(&call_line) - 1;
	printf("inlined %lx inlined_helper %d outer_function %d\n", (unsigned long)ret_addr, line,
	       call_line);
	printf("libc %lx getpid\n", (unsigned long)(void *)getpid + 1);
	printf("libcmain %lx __libc_start_call_main\n", (unsigned long)__builtin_return_address(0));
	printf("maps\n");
	fflush(stdout);
	m = fopen("/proc/self/maps", "r");
	if (!m)
		return 1;
	while ((n = fread(buf, 1, sizeof(buf), m)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(m);
	printf("end\n");
	return 0;
}
