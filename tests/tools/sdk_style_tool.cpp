// SPDX-License-Identifier: MIT
//
// The same kind of tool in C++, the way AMD's C++ samples are written:
// static configure results built with aggregate initialization, the client
// name set in rocprofiler_configure, the version checked. Built against our
// include/rocattach/tool.h. Records like sdk_style_tool.c, as "sdk-cxx".
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <rocattach/tool.h>

#define EXPORT __attribute__((visibility("default")))

namespace
{
constexpr const char *tool_name = "sdk-cxx";
rocprofiler_client_id_t *client = nullptr;
int tool_data = 42;

void record(const std::string &line)
{
	const char *dir = std::getenv("ROCPROF_OUTPUT_PATH");
	std::string path = std::string(dir && *dir ? dir : ".") + "/sdk-tool." + tool_name + "." +
			   std::to_string(getpid()) + ".log";
	std::string text = line + "\n";
	mkdir(dir && *dir ? dir : ".", 0755); // its parent is the test's
	int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0)
		return;
	if (write(fd, text.data(), text.size()) < 0)
		text.clear();
	close(fd);
}

int tool_init(rocprofiler_client_finalize_t, void *data)
{
	record("initialize data_ok=" + std::to_string(data == &tool_data));
	return 0;
}

void tool_fini(void *data)
{
	record("finalize data_ok=" + std::to_string(data == &tool_data));
}

int tool_attach(rocprofiler_client_detach_t, rocprofiler_context_id_t *, uint64_t n, void *data)
{
	record("tool_attach contexts=" + std::to_string(n) +
	       " data_ok=" + std::to_string(data == &tool_data));
	return 0;
}

void tool_detach(void *data)
{
	record("tool_detach data_ok=" + std::to_string(data == &tool_data));
}
} // namespace

extern "C" EXPORT rocprofiler_tool_configure_result_t *
rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority,
		      rocprofiler_client_id_t *id)
{
	uint32_t major = version / 10000, minor = (version % 10000) / 100, patch = version % 100;

	id->name = tool_name;
	client = id;
	record("configure version=" + std::to_string(major) + "." + std::to_string(minor) + "." +
	       std::to_string(patch) + " runtime=" + (runtime_version ? runtime_version : "(null)") +
	       " priority=" + std::to_string(priority) + " id_size=" + std::to_string(id->size) +
	       " name=" + id->name);
	if (major != 1 || version < 10200)
		return nullptr;
	if (const char *decline = std::getenv("ROCP_TEST_SDK_DECLINE");
	    decline && std::strcmp(decline, tool_name) == 0)
		return nullptr;
	static auto cfg = rocprofiler_tool_configure_result_t{
	    sizeof(rocprofiler_tool_configure_result_t), &tool_init, &tool_fini, &tool_data};
	return &cfg;
}

extern "C" EXPORT rocprofiler_tool_configure_attach_result_t *
rocprofiler_configure_attach(uint32_t, const char *, uint32_t priority,
			     rocprofiler_client_id_t *id)
{
	static auto cfg = rocprofiler_tool_configure_attach_result_t{
	    sizeof(rocprofiler_tool_configure_attach_result_t), &tool_attach, &tool_detach,
	    &tool_data};

	record("configure_attach priority=" + std::to_string(priority) + " name_kept=" +
	       std::to_string(id == client && id->name && std::strcmp(id->name, tool_name) == 0));
	return &cfg;
}
