// sqlx::migrate! embeds the migrations at compile time; this makes cargo notice new files.
fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
