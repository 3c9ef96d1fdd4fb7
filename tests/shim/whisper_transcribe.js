// Transcribes one second of a synthetic tone with whisper.node (the addon alone, as the
// @fugood/whisper.node wrapper loads it) and prints the result as JSON: what whisper.cpp
// decoded, segment by segment, with its timestamps. Deterministic: greedy decoding, no
// temperature fallback, a fixed thread count.
//
// Usage: node whisper_transcribe.js ADDON MODEL [RUNS]
const [addonPath, modelPath, runsArg] = process.argv.slice(2);
const { WhisperContext } = require(addonPath);

const rate = 16000;
const pcm = new Int16Array(rate);
for (let i = 0; i < pcm.length; i++) {
  const t = i / rate;
  pcm[i] = Math.round(8000 * Math.sin(2 * Math.PI * 440 * t) + 4000 * Math.sin(2 * Math.PI * 97 * t));
}

async function main() {
  const ctx = new WhisperContext({ filePath: modelPath, useGpu: false });
  const runs = Number(runsArg || 1);
  for (let r = 0; r < runs; r++) {
    const { promise } = ctx.transcribeData(pcm.buffer.slice(0), {
      maxThreads: 2,
      temperature: 0,
      temperatureInc: 0,
      beamSize: -1,
      bestOf: 1,
    });
    const res = await promise;
    console.log(JSON.stringify({ run: r, result: res.result, segments: res.segments }));
  }
  await ctx.release();
}

main().catch((e) => {
  console.error("whisper_transcribe:", e && e.message ? e.message : e);
  process.exit(1);
});
