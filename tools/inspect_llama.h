/* inspect_llama.h — `tinygpt inspect` of the Llama files that are not GGUF:
 * llama2.c checkpoints and Hugging Face LlamaForCausalLM folders. */
#ifndef TINYGPT_TOOLS_INSPECT_LLAMA_H
#define TINYGPT_TOOLS_INSPECT_LLAMA_H

#include <stddef.h>

/* When path is one of them (a llama2.c file by its magic or its size-
 * agreeing header, a folder whose config.json names a Llama), describes it
 * (text, or one JSON object) and returns the exit code; returns -1 when it
 * is not, for the caller's GGUF / GPT-2 paths. */
int inspect_llama(const char *path, int json);

/* For a file that is not GGUF: why it is not a llama2.c checkpoint either
 * ("its 7-int header implies N bytes, the file has M", ...); "" when it
 * cannot be read. */
void inspect_llama_why(const char *path, char *out, size_t cap);

#endif
