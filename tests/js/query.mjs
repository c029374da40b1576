// A JavaScript chromadb client querying a chromasync collection by text, as a user's script
// would: node query.mjs URL COLLECTION QUERIES_JSON [--models DIR] [--hub URL] [--vectors]
// prints {"function": <the collection's embedding function>, "tops": [<each query's 5 ids>]}.
//   --models DIR  transformers.js reads the model from DIR and never from the hub
//   --hub URL     where transformers.js would download it from (the tests name a dead port)
//   --vectors     QUERIES_JSON holds query vectors: queryEmbeddings, no embedding function
import { parseArgs } from "node:util";
import { env } from "@huggingface/transformers";
import { ChromaClient } from "chromadb";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { models: { type: "string" }, hub: { type: "string" }, vectors: { type: "boolean" } },
});
const [url, name, queries] = positionals;
if (values.models) {
  env.allowRemoteModels = false;
  env.localModelPath = values.models;
}
if (values.hub) env.remoteHost = values.hub;

const { hostname, port } = new URL(url);
const client = new ChromaClient({ host: hostname, port: Number(port), ssl: false });
const collection = await client.getCollection({ name });
const tops = [];
for (const query of JSON.parse(queries)) {
  const asked = values.vectors ? { queryEmbeddings: [query] } : { queryTexts: [query] };
  tops.push((await collection.query({ ...asked, nResults: 5 })).ids[0]);
}
const fn = collection.configuration?.embeddingFunction ?? collection.configuration?.embedding_function;
console.log(JSON.stringify({ function: fn?.name ?? null, tops }));
