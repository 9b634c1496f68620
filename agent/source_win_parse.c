/* placeholder: being written (see the sources issue) */
