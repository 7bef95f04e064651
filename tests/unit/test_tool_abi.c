/* SPDX-License-Identifier: MIT */
/*
 * include/rocattach/tool.h against rocprofiler-sdk's own declarations. The
 * fields' types below are read off the SDK's headers in ROCm/rocm-systems,
 * projects/rocprofiler-sdk/source/include/rocprofiler-sdk/ (the newest stored
 * version of each):
 *   registration.h @ 1803c2273abdb5c1bdb8617d06fd1650ee674e6a:
 *     rocprofiler_client_id_t: size_t size; const char *name; const uint32_t handle
 *     rocprofiler_tool_configure_result_t: size_t size; initialize, finalize
 *       (function pointers); void *tool_data
 *   experimental/registration.h @ 410f315dd17c897d67d9864b413d4630bb3cf85a:
 *     rocprofiler_tool_configure_attach_result_t: size_t size; tool_attach,
 *       tool_detach (function pointers); void *tool_data
 *   fwd.h @ 04098322519e300d7f8462e9d21d8792a6cd4f50 (newer than the stored
 *   c0fb085268b13f85bf1f44a9dafa09f64fccdb5a, which has the same struct):
 *     rocprofiler_context_id_t: uint64_t handle
 * The sizes and offsets those fields give are computed here by the x86-64
 * System V psABI's rules for LP64 (each field at the next multiple of its
 * alignment; the struct padded to its largest alignment), then compared with
 * what the compiler makes of our header: no figure is restated from it.
 * The version: projects/rocprofiler-sdk/CHANGELOG.md @
 * 0029a62d9e7ccac1224c103807d7b22a64acf421, "ROCprofiler-SDK 1.3.5", the
 * newest release. rocprofiler-register's error codes: docs/protocol.md.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/tool.h>
#include <rocattach/version.h>

/* The C types the SDK's fields use, with their LP64 size and alignment (psABI table 3.1). */
enum c_type { SIZE_T, DATA_PTR, FUNC_PTR, UINT32, UINT64 };
static const struct {
	size_t size, align;
} lp64[] = {
    [SIZE_T] = {8, 8}, [DATA_PTR] = {8, 8}, [FUNC_PTR] = {8, 8},
    [UINT32] = {4, 4}, [UINT64] = {8, 8},
};

#define MAX_FIELDS 4

struct sdk_struct {
	size_t n;
	enum c_type field[MAX_FIELDS];
};

/* The SDK's structs, field by field (see the top). */
static const struct sdk_struct sdk_client_id = {3, {SIZE_T, DATA_PTR, UINT32}};
static const struct sdk_struct sdk_configure_result = {4, {SIZE_T, FUNC_PTR, FUNC_PTR, DATA_PTR}};
static const struct sdk_struct sdk_attach_result = {4, {SIZE_T, FUNC_PTR, FUNC_PTR, DATA_PTR}};
static const struct sdk_struct sdk_context_id = {1, {UINT64}};

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* The offset of each field into off[], and the struct's size. */
static size_t layout(const struct sdk_struct *s, size_t off[MAX_FIELDS])
{
	size_t at = 0, align = 1;

	for (size_t i = 0; i < s->n; i++) {
		const size_t a = lp64[s->field[i]].align;

		at = round_up(at, a);
		off[i] = at;
		at += lp64[s->field[i]].size;
		align = a > align ? a : align;
	}
	return round_up(at, align);
}

/* Our header's figures for one struct: its size, each field's offset and size. */
struct ours {
	size_t size, off[MAX_FIELDS], len[MAX_FIELDS];
};

static void same_layout(const char *name, const struct sdk_struct *s, const struct ours *o)
{
	size_t off[MAX_FIELDS], size = layout(s, off);

	print_message("%s: %zu bytes\n", name, size);
	assert_int_equal(o->size, size);
	for (size_t i = 0; i < s->n; i++) {
		assert_int_equal(o->off[i], off[i]);
		assert_int_equal(o->len[i], lp64[s->field[i]].size);
	}
}

/* The psABI figures above are this compiler's: the target is LP64. */
static void test_lp64(void **state)
{
	(void)state;
	assert_int_equal(sizeof(size_t), lp64[SIZE_T].size);
	assert_int_equal(_Alignof(size_t), lp64[SIZE_T].align);
	assert_int_equal(sizeof(void *), lp64[DATA_PTR].size);
	assert_int_equal(sizeof(void (*)(void)), lp64[FUNC_PTR].size);
	assert_int_equal(sizeof(uint32_t), lp64[UINT32].size);
	assert_int_equal(_Alignof(uint64_t), lp64[UINT64].align);
}

static void test_client_id_layout(void **state)
{
	typedef rocprofiler_client_id_t T;
	const struct ours o = {
	    sizeof(T),
	    {offsetof(T, size), offsetof(T, name), offsetof(T, handle)},
	    {sizeof(((T *)0)->size), sizeof(((T *)0)->name), sizeof(((T *)0)->handle)}};

	(void)state;
	same_layout("rocprofiler_client_id_t", &sdk_client_id, &o);
}

static void test_configure_result_layout(void **state)
{
	typedef rocprofiler_tool_configure_result_t T;
	const struct ours o = {sizeof(T),
			       {offsetof(T, size), offsetof(T, initialize), offsetof(T, finalize),
				offsetof(T, tool_data)},
			       {sizeof(((T *)0)->size), sizeof(((T *)0)->initialize),
				sizeof(((T *)0)->finalize), sizeof(((T *)0)->tool_data)}};

	(void)state;
	same_layout("rocprofiler_tool_configure_result_t", &sdk_configure_result, &o);
}

static void test_configure_attach_result_layout(void **state)
{
	typedef rocprofiler_tool_configure_attach_result_t T;
	const struct ours o = {sizeof(T),
			       {offsetof(T, size), offsetof(T, tool_attach),
				offsetof(T, tool_detach), offsetof(T, tool_data)},
			       {sizeof(((T *)0)->size), sizeof(((T *)0)->tool_attach),
				sizeof(((T *)0)->tool_detach), sizeof(((T *)0)->tool_data)}};

	(void)state;
	same_layout("rocprofiler_tool_configure_attach_result_t", &sdk_attach_result, &o);
}

static void test_context_id_layout(void **state)
{
	typedef rocprofiler_context_id_t T;
	const struct ours o = {sizeof(T), {offsetof(T, handle)}, {sizeof(((T *)0)->handle)}};

	(void)state;
	same_layout("rocprofiler_context_id_t", &sdk_context_id, &o);
}

static void test_sdk_version(void **state)
{
	(void)state;
	assert_int_equal(ROCATTACH_SDK_VERSION, 10305);
	assert_string_equal(ROCATTACH_SDK_VERSION_STRING, "1.3.5");
	/* Tools offer rocprofiler_configure_attach from 1.2.0 on. */
	assert_true(ROCATTACH_SDK_VERSION >= 10200);
}

static void test_register_error_values(void **state)
{
	(void)state;
	assert_int_equal(ROCATTACH_REGISTER_SUCCESS, 0);
	assert_int_equal(ROCATTACH_REGISTER_NO_TOOLS, 1);
	assert_int_equal(ROCATTACH_REGISTER_DEADLOCK, 2);
	assert_int_equal(ROCATTACH_REGISTER_BAD_API_TABLE_LENGTH, 3);
	assert_int_equal(ROCATTACH_REGISTER_UNSUPPORTED_API, 4);
	assert_int_equal(ROCATTACH_REGISTER_INVALID_API_ADDRESS, 5);
	assert_int_equal(ROCATTACH_REGISTER_ROCPROFILER_ERROR, 6);
	assert_int_equal(ROCATTACH_REGISTER_EXCESS_API_INSTANCES, 7);
	assert_int_equal(ROCATTACH_REGISTER_INVALID_ARGUMENT, 8);
	assert_int_equal(ROCATTACH_REGISTER_ATTACHMENT_NOT_AVAILABLE, 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lp64),
	    cmocka_unit_test(test_client_id_layout),
	    cmocka_unit_test(test_configure_result_layout),
	    cmocka_unit_test(test_configure_attach_result_layout),
	    cmocka_unit_test(test_context_id_layout),
	    cmocka_unit_test(test_sdk_version),
	    cmocka_unit_test(test_register_error_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
