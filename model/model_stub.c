/* model_stub.c — placeholder until the forward pass lands (issue #4). */
typedef int tg_model_placeholder;
