/** A page that says what went wrong and what to do, without the shell (no session needed). */
export function ErrorPage({ title, detail }: { title: string; detail: string }) {
  return (
    <main class="narrow">
      <h1>{title}</h1>
      <p>{detail}</p>
      <p>
        <a href="/">Back to the console</a>
      </p>
    </main>
  );
}
