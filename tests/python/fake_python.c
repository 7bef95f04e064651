/* SPDX-License-Identifier: MIT */
/*
 * A program that looks like a CPython whose layout the stack tool does not
 * know (tests/python/test_python.sh): it exports the symbols the tool reads
 * at attach, with a version it has no layout for. Built twice:
 *   - Py_Version 3.14.0 (PY_VERSION_HEX 0x030e00f0), as 3.11 and later export it;
 *   - FAKE_OLD: no Py_Version, Py_GetVersion() "3.9.2 (fake)", as before 3.11.
 * Its main thread waits in _PyEval_EvalFrameDefault (a read of stdin) so that
 * the reason shows above it. Prints "ready"; stops on stdin's end.
 */
#include <stdio.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default"), used))

#ifdef FAKE_OLD
EXPORT const char *Py_GetVersion(void)
{
	return "3.9.2 (fake)";
}
#else
EXPORT const unsigned long Py_Version = 0x030e00f0;
#endif

EXPORT char _PyRuntime[4096];
EXPORT char PyCode_Type[256];

EXPORT __attribute__((noinline)) int _PyEval_EvalFrameDefault(void)
{
	char buf[64];

	while (read(0, buf, sizeof(buf)) > 0)
		;
	return 0;
}

int main(void)
{
	printf("ready\n");
	fflush(stdout);
	return _PyEval_EvalFrameDefault();
}
