export default function HomePage() {
  return (
    <main style={{ maxWidth: 720, margin: "4rem auto", padding: "0 1rem" }}>
      <h1>Cadre</h1>
      <p>Teams of LLM agents that keep working while you are away.</p>
    </main>
  );
}
