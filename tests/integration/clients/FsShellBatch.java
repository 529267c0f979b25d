import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FsShell;
import org.apache.hadoop.util.ToolRunner;

/**
 * Hadoop's own FsShell (the `hadoop fs` commands), run for each line of standard input in one
 * JVM: a JVM start costs more than most commands. A line is one command, its arguments
 * separated by tabs. After each command, "<<<rc N>>>" goes to standard output and standard
 * error, so the caller can split both by command.
 */
public class FsShellBatch {
  public static void main(String[] args) throws Exception {
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    Configuration conf = new Configuration();
    String line;
    while ((line = in.readLine()) != null) {
      int rc = ToolRunner.run(new FsShell(conf), line.split("\t", -1));
      System.out.flush();
      System.err.flush();
      System.out.println("<<<rc " + rc + ">>>");
      System.err.println("<<<rc " + rc + ">>>");
      System.out.flush();
      System.err.flush();
    }
  }
}
