// SPDX-License-Identifier: MIT
// The C++ program for test_symbolize: lines like sym_prog.c's, with names
// that must come out demangled.
#include <stdio.h>

static void *ret_addr, *method_ret;
static int call_line, method_line;

__attribute__((noinline)) void record_method_return()
{
	method_ret = __builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

namespace ns {
class Widget {
      public:
	int method(int x);
};

__attribute__((noinline)) int Widget::method(int x)
{
	ret_addr = __builtin_return_address(0);
	record_method_return(); method_line = __LINE__;
	return x + 1;
}

template <typename T> __attribute__((noinline)) T twice(T x)
{
	Widget w;
	int r = w.method(0); call_line = __LINE__;
	return x + x + r - r;
}
} // namespace ns

int main()
{
	char buf[4096];
	size_t n;
	FILE *m;
	int (*tw)(int) = ns::twice<int>;

	tw(1);
	printf("exact %lx ns::twice<int>(int)\n", (unsigned long)(void *)tw + 1);
	printf("return %lx ns::twice<int>(int) %d\n", (unsigned long)ret_addr, call_line);
	printf("return %lx ns::Widget::method(int) %d\n", (unsigned long)method_ret, method_line);
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
